import { and, eq, isNull } from "drizzle-orm";
import { randomBase62 } from "../crypto";
import { accounts } from "../model/schema";
import type { Database } from "./db";

/** An account's secret for signing transform URLs, and when it was made. */
export interface SigningSecret {
  secret: string;
  createdAt: number;
}

/** A new secret: `sk_` and 40 base62 characters (238 bits). */
const newSecret = () => `sk_${randomBase62(40)}`;

/** The account's secret, or null when it has none yet (then no URL of its uploads is signed). */
export async function signingSecretOf(db: Database, accountId: string): Promise<SigningSecret | null> {
  const [row] = await db
    .select({ secret: accounts.signingSecret, createdAt: accounts.signingSecretCreatedAt })
    .from(accounts)
    .where(eq(accounts.id, accountId));
  return row?.secret ? { secret: row.secret, createdAt: row.createdAt ?? 0 } : null;
}

/**
 * The account's secret, made now if it has none. Two first reads at once both answer the one
 * that was stored first: the write only fills an empty column.
 */
export async function ensureSigningSecret(db: Database, accountId: string, now: number): Promise<SigningSecret> {
  const existing = await signingSecretOf(db, accountId);
  if (existing) return existing;
  const [made] = await db
    .update(accounts)
    .set({ signingSecret: newSecret(), signingSecretCreatedAt: now })
    .where(and(eq(accounts.id, accountId), isNull(accounts.signingSecret)))
    .returning({ secret: accounts.signingSecret, createdAt: accounts.signingSecretCreatedAt });
  // Filled meanwhile by another first read: read what it stored.
  return made?.secret
    ? { secret: made.secret, createdAt: made.createdAt ?? now }
    : (await signingSecretOf(db, accountId))!;
}

/** A new secret in place of the old one: every URL signed with the old one stops working at once. */
export async function rotateSigningSecret(db: Database, accountId: string, now: number): Promise<SigningSecret> {
  const secret = newSecret();
  await db
    .update(accounts)
    .set({ signingSecret: secret, signingSecretCreatedAt: now })
    .where(eq(accounts.id, accountId));
  return { secret, createdAt: now };
}
