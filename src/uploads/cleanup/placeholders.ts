import { placeholderWrite, uploadsWithoutPlaceholder } from "../../storage/upload-placeholders";
import type { Stores } from "../../storage/stores";
import { placeholderFromStored } from "../placeholders";

/**
 * The cron job's backfill of placeholders, for uploads made before they existed (or whose
 * placeholder could not be made then): up to `limit` a run, each one read of its thumbnail and
 * one decode, their rows written in one batch. A thumbnail that cannot be decoded is recorded as
 * having none (NO_PLACEHOLDER), so no later run takes it again; one left for later (no memory
 * now, storage failing) is taken again by the next run. The uploads taken one after another:
 * each decode holds the isolate's memory, and a run has a minute.
 */
export async function backfillPlaceholders(deps: Stores, limit: number): Promise<number> {
  const due = await uploadsWithoutPlaceholder(deps.db, limit);
  const writes = [];
  for (const { id, thumbKey } of due) {
    if (!thumbKey) continue;
    const columns = await placeholderFromStored(deps.bucket, id, thumbKey);
    if (columns.placeholder !== null) writes.push(placeholderWrite(deps.db, id, thumbKey, columns));
  }
  const [first, ...rest] = writes;
  if (first) await deps.db.batch([first, ...rest]);
  return writes.length;
}
