import { and, asc, count, eq, sql } from "drizzle-orm";
import type { Database } from "./db";
import { passkeys, type PasskeyRow } from "../model/sign-in-schema";
import { claimedBy } from "./sign-in-links";

export type NewPasskey = Omit<typeof passkeys.$inferInsert, "lastUsedAt">;

/**
 * The passkey's insert: alone when a signed-in account adds one, or guarded by the link it is
 * registered through (claimedBy), in the batch that claims that link.
 */
export function insertPasskey(db: Database, passkey: NewPasskey, link?: { tokenHash: string; now: number }) {
  if (!link) return db.insert(passkeys).values(passkey);
  return db.insert(passkeys).select(
    db
      .select({
        id: sql<string>`${passkey.id}`.as("id"),
        accountId: sql<string>`${passkey.accountId}`.as("account_id"),
        publicKey: sql<string>`${passkey.publicKey}`.as("public_key"),
        counter: sql<number>`${passkey.counter ?? 0}`.as("counter"),
        transports: sql<string | null>`${passkey.transports ?? null}`.as("transports"),
        name: sql<string>`${passkey.name}`.as("name"),
        createdAt: sql<number>`${passkey.createdAt}`.as("created_at"),
        lastUsedAt: sql<null>`NULL`.as("last_used_at"),
      })
      .from(sql`(SELECT 1)`)
      .where(claimedBy(link.tokenHash, passkey.accountId, link.now)),
  );
}

export async function findPasskey(db: Database, id: string): Promise<PasskeyRow | undefined> {
  return db.select().from(passkeys).where(eq(passkeys.id, id)).get();
}

export async function listPasskeys(db: Database, accountId: string): Promise<PasskeyRow[]> {
  return db.select().from(passkeys).where(eq(passkeys.accountId, accountId)).orderBy(asc(passkeys.createdAt)).all();
}

/** After a sign-in: the authenticator's new counter, and when. */
export async function notePasskeyUse(db: Database, id: string, counter: number, now: number): Promise<void> {
  await db.update(passkeys).set({ counter, lastUsedAt: now }).where(eq(passkeys.id, id));
}

/**
 * Removes the account's passkey `id` unless it is the account's last: without one, nobody could
 * sign in to the account again. "gone" when the account has no such passkey.
 */
export async function deletePasskey(db: Database, accountId: string, id: string): Promise<"deleted" | "last" | "gone"> {
  const others = db
    .select({ n: count() })
    .from(passkeys)
    .where(and(eq(passkeys.accountId, accountId), sql`${passkeys.id} <> ${id}`));
  const rows = await db
    .delete(passkeys)
    .where(and(eq(passkeys.accountId, accountId), eq(passkeys.id, id), sql`(${others}) > 0`))
    .returning({ id: passkeys.id });
  if (rows.length) return "deleted";
  return (await findPasskey(db, id))?.accountId === accountId ? "last" : "gone";
}
