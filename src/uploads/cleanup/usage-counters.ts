import { accountsToReconcile, reconcileUsage } from "../../storage/usage";
import type { Stores } from "../../storage/stores";

/**
 * Accounts reconciled a run at most: one bounded read and one UPDATE of at most this many ids (D1
 * binds at most 100 values a query).
 */
export const USAGE_BATCH = 90;

/**
 * The rows a run may read (D1's `rows_read`, which D1 bills): the UPDATE reads two index entries per
 * counted upload of the accounts it checks (their sizes' sum and their count, from
 * uploads_account_counted), so a run takes the accounts due, oldest first, while their counters
 * say they fit; one account always, however many uploads it has (one range of one index, read
 * in about a second at a million uploads, well within D1's 30 s a query).
 */
export const USAGE_ROWS_PER_RUN = 10_000;

/**
 * An account's counters are checked at most once a day. Every change to an upload already moves
 * them in its own transaction, so drift means a bug or a hand-made change: mended within a day,
 * without reading every upload every minute.
 */
export const USAGE_CHECK_EVERY_MS = 24 * 60 * 60_000;

/** Rows the reconciliation of an account with `uploads` counted uploads reads (see USAGE_ROWS_PER_RUN). */
const rowsToCheck = (uploads: number) => 2 * Math.max(uploads, 0) + 2;

/**
 * The counters' sweep: every run takes the accounts whose counters were checked longest ago (and
 * over a day ago), as many as USAGE_ROWS_PER_RUN lets it read, and sets them to what the uploads
 * table says they store (the sizes and number of uploads whose files are still stored), logging
 * any that had drifted. Returns how many were mended.
 */
export async function sweepUsageCounters(deps: Stores, limit = USAGE_BATCH): Promise<number> {
  const now = deps.now();
  const candidates = await accountsToReconcile(deps.db, limit, now - USAGE_CHECK_EVERY_MS);
  const due: typeof candidates = [];
  // The read of the candidates itself: an index entry and a row each.
  let rows = 2 * candidates.length;
  for (const account of candidates) {
    rows += rowsToCheck(account.uploadsUsed);
    if (due.length > 0 && rows > USAGE_ROWS_PER_RUN) break;
    due.push(account);
  }
  if (due.length === 0) return 0;
  const reconciled = await reconcileUsage(
    deps.db,
    due.map((a) => a.id),
    now,
  );
  const before = new Map(due.map((a) => [a.id, a]));
  let mended = 0;
  for (const account of reconciled) {
    const was = before.get(account.id);
    if (!was || (was.bytesUsed === account.bytesUsed && was.uploadsUsed === account.uploadsUsed)) continue;
    mended++;
    console.warn(JSON.stringify({ usageMended: account.id, was, now: account }));
  }
  return mended;
}
