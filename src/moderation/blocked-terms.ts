import { notFound, unprocessable } from "../errors";
import type { Database } from "../storage/db";
import * as store from "../storage/moderation";
import { normalizeForModeration } from "./normalize";

/** The blocked terms as entered, each with the normalised form text is matched against. */
export async function blockedTerms(db: Database) {
  return (await store.listBlockedTerms(db)).map(({ term, normalized }) => ({ term, normalized }));
}

/** Blocks `term` by its normalised form; `added` is false when that form was already blocked. */
export async function blockTerm(db: Database, term: string, now: number) {
  const normalized = normalizeForModeration(term);
  if (!normalized) throw unprocessable("term: has no letters or digits to match.");
  const added = await store.addBlockedTerm(db, { term, normalized, createdAt: now });
  return { term: { term, normalized }, added };
}

/** Unblocks the term as entered, or any spelling of it: it is removed by its normalised form. */
export async function unblockTerm(db: Database, spelling: string) {
  const normalized = normalizeForModeration(spelling);
  if (!(await store.deleteBlockedTerm(db, normalized))) throw notFound("That term is not blocked.");
  return { normalized, blocked: false as const };
}
