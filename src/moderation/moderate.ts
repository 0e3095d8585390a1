import { unprocessable } from "../errors";
import type { Database } from "../storage/db";
import { listBlockedTerms } from "../storage/moderation";
import { normalizeForModeration } from "./normalize";

/**
 * The moderation step for text people write (title, description): the same function for the
 * API and any future web form. A field containing a blocked term, however it is spelled, is
 * refused with a 422 that names the field (but not the term).
 */
export async function assertAcceptableText(db: Database, fields: Record<string, string | null | undefined>): Promise<void> {
  const given = Object.entries(fields).filter((entry): entry is [string, string] => typeof entry[1] === "string" && entry[1] !== "");
  if (given.length === 0) return;
  const terms = (await listBlockedTerms(db)).map((t) => t.normalized);
  if (terms.length === 0) return;
  for (const [field, text] of given) {
    const normalized = normalizeForModeration(text);
    if (terms.some((term) => normalized.includes(term))) throw unprocessable(`The ${field} was refused by moderation: it contains a blocked term.`);
  }
}
