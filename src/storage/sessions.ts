import { and, desc, eq, gt, ne, sql } from "drizzle-orm";
import type { Database } from "./db";
import { accounts, apiKeys, ipBans } from "../model/schema";
import { sessions, type SessionRow } from "../model/sign-in-schema";
import { claimedBy } from "./sign-in-links";
import { deleteExpiredRows } from "./expired-rows";

export type NewSession = typeof sessions.$inferInsert;

/** The session's insert: alone at sign-in, or guarded by the link that registered its passkey. */
export function insertSession(db: Database, session: NewSession, link?: { tokenHash: string; now: number }) {
  if (!link) return db.insert(sessions).values(session);
  return db.insert(sessions).select(
    db
      .select({
        tokenHash: sql<string>`${session.tokenHash}`.as("token_hash"),
        id: sql<string>`${session.id}`.as("id"),
        accountId: sql<string>`${session.accountId}`.as("account_id"),
        csrfToken: sql<string>`${session.csrfToken}`.as("csrf_token"),
        passkeyId: sql<string | null>`${session.passkeyId ?? null}`.as("passkey_id"),
        userAgent: sql<string | null>`${session.userAgent ?? null}`.as("user_agent"),
        createdAt: sql<number>`${session.createdAt}`.as("created_at"),
        lastSeenAt: sql<number>`${session.lastSeenAt}`.as("last_seen_at"),
        expiresAt: sql<number>`${session.expiresAt}`.as("expires_at"),
      })
      .from(sql`(SELECT 1)`)
      .where(claimedBy(link.tokenHash, session.accountId, link.now)),
  );
}

/** A current session, with what a caller needs of its account: as findKeyOwner gives for a full key. */
export interface SessionOwner {
  session: SessionRow;
  banned: boolean;
  ipBanned: boolean;
  fullKeyHash: string;
}

export async function findSessionOwner(
  db: Database,
  tokenHash: string,
  ip: string,
  now: number,
): Promise<SessionOwner | null> {
  const row = await db
    .select({
      session: sessions,
      bannedAt: accounts.bannedAt,
      fullKeyHash: apiKeys.keyHash,
      ipBanned: sql<number>`EXISTS (SELECT 1 FROM ${ipBans} WHERE ${ipBans.ip} = ${ip})`,
    })
    .from(sessions)
    .innerJoin(accounts, eq(accounts.id, sessions.accountId))
    .innerJoin(apiKeys, and(eq(apiKeys.accountId, sessions.accountId), eq(apiKeys.kind, "full")))
    .where(and(eq(sessions.tokenHash, tokenHash), gt(sessions.expiresAt, now)))
    .get();
  if (!row) return null;
  return {
    session: row.session,
    banned: row.bannedAt !== null,
    ipBanned: row.ipBanned === 1,
    fullKeyHash: row.fullKeyHash,
  };
}

/** Seen again: the idle clock restarts, and the session lasts until `expiresAt` (never past its cap). */
export async function touchSession(db: Database, tokenHash: string, now: number, expiresAt: number): Promise<void> {
  await db.update(sessions).set({ lastSeenAt: now, expiresAt }).where(eq(sessions.tokenHash, tokenHash));
}

export async function listSessions(db: Database, accountId: string, now: number): Promise<SessionRow[]> {
  return db
    .select()
    .from(sessions)
    .where(and(eq(sessions.accountId, accountId), gt(sessions.expiresAt, now)))
    .orderBy(desc(sessions.lastSeenAt))
    .all();
}

/** Ends the account's session `id`; false when the account has none of that id. */
export async function deleteSession(db: Database, accountId: string, id: string): Promise<boolean> {
  const rows = await db
    .delete(sessions)
    .where(and(eq(sessions.accountId, accountId), eq(sessions.id, id)))
    .returning({ id: sessions.id });
  return rows.length > 0;
}

export async function deleteSessionByToken(db: Database, tokenHash: string): Promise<void> {
  await db.delete(sessions).where(eq(sessions.tokenHash, tokenHash));
}

/** Ends every session of the account but `keep` (the one asking), or all of them. */
export async function deleteOtherSessions(db: Database, accountId: string, keep?: string): Promise<number> {
  const rows = await db
    .delete(sessions)
    .where(and(eq(sessions.accountId, accountId), keep ? ne(sessions.tokenHash, keep) : undefined))
    .returning({ id: sessions.id });
  return rows.length;
}

/** Sessions past their expiry, up to `limit` at a time (the cron job's sweep). */
export const deleteExpiredSessions = (db: Database, now: number, limit: number) =>
  deleteExpiredRows(db, { table: sessions, key: sessions.tokenHash, expiresAt: sessions.expiresAt }, now, limit);
