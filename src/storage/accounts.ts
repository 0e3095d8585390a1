import { and, eq, exists, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import type { Database } from "./db";
import { compiled } from "./compiled";
import type { KeyKind } from "../model/key-kinds";
import { accounts, apiKeys, ipBans } from "../model/schema";

export interface KeyOwner {
  accountId: string;
  kind: KeyKind;
  banned: boolean;
  /** The account's full key: the one whose reads must see this key's writes. */
  fullKeyHash: string;
  /** Whether the address the request came from is banned from uploading. */
  ipBanned: boolean;
}

export async function insertAccount(
  db: Database,
  account: { id: string; name: string; keyHashes: Record<KeyKind, string>; now: number },
): Promise<void> {
  await db.batch([
    db.insert(accounts).values({ id: account.id, name: account.name, createdAt: account.now }),
    db.insert(apiKeys).values([
      { accountId: account.id, kind: "full", keyHash: account.keyHashes.full, createdAt: account.now },
      { accountId: account.id, kind: "upload", keyHash: account.keyHashes.upload, createdAt: account.now },
    ]),
  ]);
}

/** Replaces the account's key of that kind; false when the account does not exist. */
export async function replaceKey(db: Database, accountId: string, kind: KeyKind, keyHash: string, now: number) {
  const rows = await db
    .update(apiKeys)
    .set({ keyHash, createdAt: now })
    .where(and(eq(apiKeys.accountId, accountId), eq(apiKeys.kind, kind)))
    .returning({ accountId: apiKeys.accountId });
  return rows.length > 0;
}

const fullKey = alias(apiKeys, "full_key");

const keyOwnerQuery = compiled<{ keyHash: string; ip: string }>((db, p) =>
  db
    .select({
      accountId: sql<string>`${apiKeys.accountId}`.as("accountId"),
      kind: sql<string>`${apiKeys.kind}`.as("kind"),
      bannedAt: sql<number | null>`${accounts.bannedAt}`.as("bannedAt"),
      ipBanned: sql<number>`${exists(
        db
          .select({ ip: ipBans.ip })
          .from(ipBans)
          .where(eq(ipBans.ip, p("ip"))),
      )}`.as("ipBanned"),
      fullKeyHash: sql<string>`${fullKey.keyHash}`.as("fullKeyHash"),
    })
    .from(apiKeys)
    .innerJoin(accounts, eq(accounts.id, apiKeys.accountId))
    .innerJoin(fullKey, and(eq(fullKey.accountId, apiKeys.accountId), eq(fullKey.kind, "full")))
    .where(eq(apiKeys.keyHash, p("keyHash"))),
);

/**
 * The key's account, with the request address's ban read in the same statement: every API
 * request resolves its key, and uploads then need the ban without another round trip. Written
 * once per isolate (compiled.ts).
 */
export async function findKeyOwner(db: Database, keyHash: string, ip: string): Promise<KeyOwner | null> {
  const row = await keyOwnerQuery(db, { keyHash, ip }).get<{
    accountId: string;
    kind: KeyKind;
    bannedAt: number | null;
    ipBanned: number;
    fullKeyHash: string;
  }>();
  return row
    ? {
        accountId: row.accountId,
        kind: row.kind,
        banned: row.bannedAt !== null,
        ipBanned: row.ipBanned === 1,
        fullKeyHash: row.fullKeyHash,
      }
    : null;
}

/** Sets or clears the ban; false when the account does not exist. */
export async function setAccountBan(db: Database, accountId: string, bannedAt: number | null) {
  const rows = await db
    .update(accounts)
    .set({ bannedAt })
    .where(eq(accounts.id, accountId))
    .returning({ id: accounts.id });
  return rows.length > 0;
}

export async function banIp(db: Database, ip: string, now: number) {
  await db.insert(ipBans).values({ ip, createdAt: now }).onConflictDoNothing();
}

export async function unbanIp(db: Database, ip: string) {
  const rows = await db.delete(ipBans).where(eq(ipBans.ip, ip)).returning({ ip: ipBans.ip });
  return rows.length > 0;
}

/** The account's name, or null when there is no such account. */
export async function findAccountName(db: Database, accountId: string): Promise<string | null> {
  const row = await db.select({ name: accounts.name }).from(accounts).where(eq(accounts.id, accountId)).get();
  return row?.name ?? null;
}
