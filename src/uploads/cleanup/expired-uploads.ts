import { uploadPrefix } from "../../storage/keys";
import { deletePrefix } from "../../storage/objects";
import { expiredWithFiles, markFilesRemoved, purgeExpiredRows } from "../../storage/upload-expiry";
import type { Stores } from "../../storage/stores";

/**
 * Expiry. An upload stops being served and vanishes from the API the moment its expires_at
 * passes (every read checks it). This is the cron job's part: the files of expired uploads are
 * removed from storage; the row stays, marked, so that the upload's page can answer 410 Gone,
 * and is forgotten after KEEP_EXPIRED_MS.
 */
const KEEP_EXPIRED_MS = 30 * 24 * 60 * 60_000;

export async function sweepExpiredUploads(deps: Stores, limit = 200): Promise<number> {
  const now = deps.now();
  const due = await expiredWithFiles(deps.db, now, limit);
  for (const row of due) {
    // Files first: a row marked as swept never has files left behind, even after a crash here.
    await deletePrefix(deps.bucket, uploadPrefix(row.id), [row.objectKey, ...(row.thumbKey ? [row.thumbKey] : [])]);
    await markFilesRemoved(deps, row.id, now);
  }
  await purgeExpiredRows(deps.db, now - KEEP_EXPIRED_MS);
  return due.length;
}
