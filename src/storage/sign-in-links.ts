import { and, eq, isNull, sql } from "drizzle-orm";
import type { Database } from "./db";
import { deleteExpiredRows } from "./expired-rows";
import { accounts, apiKeys } from "../model/schema";
import { signInLinks, type SignInLinkRow } from "../model/sign-in-schema";

export type NewSignInLink = typeof signInLinks.$inferInsert;

export async function insertSignInLink(db: Database, link: NewSignInLink): Promise<void> {
  await db.insert(signInLinks).values(link);
}

/** The link whose token hashes to `tokenHash`, used or not, expired or not. */
export async function findSignInLink(db: Database, tokenHash: string): Promise<SignInLinkRow | undefined> {
  return db.select().from(signInLinks).where(eq(signInLinks.tokenHash, tokenHash)).get();
}

/**
 * Marks the link used by `accountId`, in the batch that registers the passkey. A link used or
 * expired since it was read writes NULL into a NOT NULL column, which fails the statement and so
 * rolls back the whole batch (one D1 transaction): two browsers racing through one link make one
 * passkey, and one account for an invite. Returns the link's key when it was claimed; none when
 * the link is gone (swept), in which case the statements claimedBy guards wrote nothing either.
 */
export const claimSignInLink = (db: Database, tokenHash: string, accountId: string, now: number) =>
  db
    .update(signInLinks)
    .set({
      usedAt: now,
      accountId,
      createdAt: sql`CASE WHEN ${signInLinks.usedAt} IS NULL AND ${signInLinks.expiresAt} > ${now}
        THEN ${signInLinks.createdAt} END`,
    })
    .where(eq(signInLinks.tokenHash, tokenHash))
    .returning({ tokenHash: signInLinks.tokenHash });

/** SQL: the link has just been claimed by `accountId` in this batch (claimSignInLink ran before). */
export const claimedBy = (tokenHash: string, accountId: string, now: number) =>
  sql`EXISTS (SELECT 1 FROM ${signInLinks} WHERE ${signInLinks.tokenHash} = ${tokenHash}
    AND ${signInLinks.accountId} = ${accountId} AND ${signInLinks.usedAt} = ${now})`;

/**
 * The account an invite makes, with its two keys (their hashes: nobody sees those keys, and the
 * dashboard shows new ones when asked), written only while the invite is unused and unexpired.
 * Runs before claimSignInLink in its batch: the link names the account, which must exist first.
 */
export function inviteAccountStatements(
  db: Database,
  tokenHash: string,
  account: { id: string; name: string; keyHashes: { full: string; upload: string } },
  now: number,
) {
  const usable = and(
    eq(signInLinks.tokenHash, tokenHash),
    isNull(signInLinks.usedAt),
    sql`${signInLinks.expiresAt} > ${now}`,
  );
  const insertAccount = db.insert(accounts).select(
    db
      .select({
        id: sql<string>`${account.id}`.as("id"),
        name: sql<string>`${account.name}`.as("name"),
        bannedAt: sql<null>`NULL`.as("banned_at"),
        createdAt: sql<number>`${now}`.as("created_at"),
        quotaBytes: signInLinks.quotaBytes,
        quotaUploads: signInLinks.quotaUploads,
        bytesUsed: sql<number>`0`.as("bytes_used"),
        uploadsUsed: sql<number>`0`.as("uploads_used"),
        usageCheckedAt: sql<number>`0`.as("usage_checked_at"),
        signingSecret: sql<null>`NULL`.as("signing_secret"),
        signingSecretCreatedAt: sql<null>`NULL`.as("signing_secret_created_at"),
      })
      .from(signInLinks)
      .where(usable),
  );
  const keyOf = (kind: "full" | "upload") =>
    db.insert(apiKeys).select(
      db
        .select({
          accountId: sql<string>`${account.id}`.as("account_id"),
          kind: sql<"full" | "upload">`${kind}`.as("kind"),
          keyHash: sql<string>`${account.keyHashes[kind]}`.as("key_hash"),
          createdAt: sql<number>`${now}`.as("created_at"),
        })
        .from(accounts)
        .where(eq(accounts.id, account.id)),
    );
  return [insertAccount, keyOf("full"), keyOf("upload")] as const;
}

/** Links past their expiry, used or not, up to `limit` at a time (the cron job's sweep). */
export const deleteExpiredSignInLinks = (db: Database, now: number, limit: number) =>
  deleteExpiredRows(
    db,
    { table: signInLinks, key: signInLinks.tokenHash, expiresAt: signInLinks.expiresAt },
    now,
    limit,
  );
