import { accountsToReconcile, reconcileUsage } from "../../storage/usage";
import type { Stores } from "../../storage/stores";

/**
 * Accounts reconciled a run: one bounded read and one UPDATE of at most this many ids (D1 binds at
 * most 100 values a query), reading the uploads of those accounts through uploads_account_created.
 */
export const USAGE_BATCH = 90;

/**
 * The counters' sweep: every run takes the accounts whose counters were checked longest ago and
 * sets them to what the uploads table says they store (the sizes and number of uploads whose files
 * are still stored), logging any that had drifted. Every change to an upload already moves its
 * account's counters in its own transaction, so drift means a bug or a hand-made change; this
 * mends it within one round of all accounts. Returns how many were mended.
 */
export async function sweepUsageCounters(deps: Stores, limit = USAGE_BATCH): Promise<number> {
  const due = await accountsToReconcile(deps.db, limit);
  if (due.length === 0) return 0;
  const reconciled = await reconcileUsage(
    deps.db,
    due.map((a) => a.id),
    deps.now(),
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
