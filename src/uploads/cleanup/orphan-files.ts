import { randomBase62 } from "../../crypto";
import { findPieceSessionByFileUpload } from "../../storage/piece-sessions";
import { findUploadRecord } from "../../storage/uploads";
import { stillAssembling } from "../intake/piece-parts";
import type { UploadDeps } from "../upload-deps";

/**
 * Every operation writes new files under new names before one database update points at them,
 * and removes old files after it; a crash between those steps can leave files nothing points at
 * (never a row pointing at a missing file). This finds them: an object under uploads/{id}/ that
 * is not the upload's current file or thumbnail, or whose upload does not exist, is deleted once
 * it is older than the grace period, which outlasts any upload or media job still writing it.
 */
export const ORPHAN_GRACE_MS = 60 * 60_000;
/** Objects looked at per run. */
const SCAN_LIMIT = 5000;

/**
 * Every stored object once, starting after a random upload id and wrapping around, so that
 * successive runs over a bucket larger than SCAN_LIMIT cover all of it.
 */
async function* uploadObjects(bucket: R2Bucket, startAfter: string) {
  for (const half of ["after", "before"] as const) {
    let cursor: string | undefined;
    do {
      const listing = await bucket.list({ prefix: "uploads/", cursor, limit: 1000, ...(half === "after" ? { startAfter } : {}) });
      for (const object of listing.objects) {
        if (half === "before" && object.key > startAfter) return;
        yield object;
      }
      cursor = listing.truncated ? listing.cursor : undefined;
    } while (cursor);
  }
}

/**
 * The objects of an upload id that stay: its row's files, or everything while a piece session
 * that reserved the id is still putting its file together (a finish that failed after
 * completing it keeps it for the next try).
 */
async function keptOf(deps: UploadDeps, id: string): Promise<Set<string> | "all"> {
  const row = await findUploadRecord(deps.db, id);
  if (row) return new Set(row.filesRemovedAt === null ? [row.objectKey, row.thumbKey ?? ""] : []);
  const session = await findPieceSessionByFileUpload(deps.db, id);
  return session && stillAssembling(session, deps.now()) ? "all" : new Set();
}

export async function sweepOrphanFiles(deps: UploadDeps): Promise<number> {
  const cutoff = deps.now() - ORPHAN_GRACE_MS;
  const keep = new Map<string, Set<string> | "all">();
  const doomed: string[] = [];
  let seen = 0;
  for await (const object of uploadObjects(deps.bucket, `uploads/${randomBase62(10)}`)) {
    if (++seen > SCAN_LIMIT) break;
    const id = object.key.slice("uploads/".length, object.key.indexOf("/", "uploads/".length));
    if (!keep.has(id)) keep.set(id, await keptOf(deps, id));
    const kept = keep.get(id)!;
    if (kept !== "all" && !kept.has(object.key) && object.uploaded.getTime() < cutoff) doomed.push(object.key);
  }
  for (let i = 0; i < doomed.length; i += 1000) await deps.bucket.delete(doomed.slice(i, i + 1000));
  return doomed.length;
}
