import { eq } from "drizzle-orm";
import type { Database } from "./db";
import { blockedTerms, flaggedContent } from "../model/schema";

export function listBlockedTerms(db: Database) {
  return db.select().from(blockedTerms).orderBy(blockedTerms.normalized);
}

/** False when the term (in its normalised form) was already blocked. */
export async function addBlockedTerm(db: Database, term: { normalized: string; term: string; createdAt: number }) {
  const rows = await db
    .insert(blockedTerms)
    .values(term)
    .onConflictDoNothing()
    .returning({ normalized: blockedTerms.normalized });
  return rows.length > 0;
}

export async function deleteBlockedTerm(db: Database, normalized: string) {
  const rows = await db
    .delete(blockedTerms)
    .where(eq(blockedTerms.normalized, normalized))
    .returning({ normalized: blockedTerms.normalized });
  return rows.length > 0;
}

export async function recordFlaggedContent(
  db: Database,
  entry: { contentHash: string; uploadId: string; reason: string | null; createdAt: number },
) {
  await db.insert(flaggedContent).values(entry).onConflictDoNothing();
}

/** The flag on these bytes, as a list of at most one row. */
export const flagOf = (db: Database, contentHash: string) =>
  db
    .select({ hash: flaggedContent.contentHash })
    .from(flaggedContent)
    .where(eq(flaggedContent.contentHash, contentHash))
    .limit(1);

export async function isFlaggedContent(db: Database, contentHash: string) {
  return (await flagOf(db, contentHash)).length > 0;
}
