import { unprocessable } from "../errors";
import type { Database } from "../storage/db";
import { listBlockedTerms } from "../storage/moderation";
import { normalizeForModeration } from "./normalize";

type ModeratedText = Record<string, string | null | undefined>;

/** The fields that carry text to check; none means no blocked term needs to be read. */
export const textToModerate = (fields: ModeratedText) =>
  Object.entries(fields).filter((entry): entry is [string, string] => typeof entry[1] === "string" && entry[1] !== "");

/**
 * The moderation step for text people write (title, description): the same rule for the API and
 * any future web form. A field containing a blocked term (`terms`, normalised), however it is
 * spelled, is refused with a 422 that names the field (but not the term).
 */
export function assertFreeOfTerms(terms: string[], fields: ModeratedText): void {
  if (terms.length === 0) return;
  for (const [field, text] of textToModerate(fields)) {
    const normalized = normalizeForModeration(text);
    if (terms.some((term) => normalized.includes(term)))
      throw unprocessable(`The ${field} was refused by moderation: it contains a blocked term.`);
  }
}

/** The moderation step with the blocked terms read here (a new upload reads them with its other checks). */
export async function assertAcceptableText(db: Database, fields: ModeratedText): Promise<void> {
  if (textToModerate(fields).length === 0) return;
  assertFreeOfTerms(
    (await listBlockedTerms(db)).map((t) => t.normalized),
    fields,
  );
}
