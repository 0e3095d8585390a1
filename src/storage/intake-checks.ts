import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "./db";
import { flagOf, listBlockedTerms } from "./moderation";
import type { BlockedTermRow, UploadRow } from "../model/schema";
import { duplicateOf, duplicateRow } from "./uploads";
import { usageOf, type AccountUsage } from "./usage";

interface IntakeChecks {
  flagged: boolean;
  /** Undefined when there is none, or when it was not asked for. */
  duplicate: UploadRow | undefined;
  /** Normalised; empty when not asked for. */
  blockedTerms: string[];
  /** The account's counters and quotas, to refuse a file that cannot fit before any more work. */
  usage: AccountUsage | undefined;
}

/**
 * What a new upload is checked against before its row is written, read in one batch (one round
 * trip): whether its bytes were flagged, the account's usage, and as asked, the account's
 * duplicate of them and the blocked terms its text is checked against.
 */
export async function readIntakeChecks(
  db: Database,
  check: { accountId: string; contentHash: string; duplicate: boolean; blockedTerms: boolean },
): Promise<IntakeChecks> {
  const queries: [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]] = [
    flagOf(db, check.contentHash),
    usageOf(db, check.accountId),
  ];
  if (check.duplicate) queries.push(duplicateOf(db, check.accountId, check.contentHash));
  if (check.blockedTerms) queries.push(listBlockedTerms(db));
  // The results come in the order of the queries, each an array of its rows.
  const results = (await db.batch(queries)) as unknown[][];
  const flagged = results.shift()!.length > 0;
  const usage = results.shift()![0] as AccountUsage | undefined;
  const duplicate = check.duplicate ? duplicateRow(results.shift() as Record<string, unknown>[]) : undefined;
  const terms = check.blockedTerms ? (results.shift() as BlockedTermRow[]).map((t) => t.normalized) : [];
  return { flagged, duplicate, blockedTerms: terms, usage };
}
