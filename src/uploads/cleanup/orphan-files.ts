import { randomBase62 } from "../../crypto";
import { isLadderKey, ladderKeysOf, variantSource } from "../../storage/keys";
import { ID_BATCH } from "../../storage/db";
import { pieceSessionsMaking } from "../../storage/piece-sessions";
import { uploadFilesOf } from "../../storage/uploads";
import { stillAssembling } from "../intake/piece-parts";
import type { Stores } from "../../storage/stores";

/**
 * Every operation writes new files under new names before one database update points at them,
 * and removes old files after it; a crash between those steps can leave files nothing points at
 * (never a row pointing at a missing file). This finds them: an object under uploads/{id}/ that
 * is not the upload's current file, thumbnail, a variant of its file or a file of the ladder its
 * row names, or whose upload does not
 * exist, is deleted once it is older than the grace period, which outlasts any upload or media
 * job still writing it.
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
      const listing = await bucket.list({
        prefix: "uploads/",
        cursor,
        limit: 1000,
        ...(half === "after" ? { startAfter } : {}),
      });
      for (const object of listing.objects) {
        if (half === "before" && object.key > startAfter) return;
        yield object;
      }
      cursor = listing.truncated ? listing.cursor : undefined;
    } while (cursor);
  }
}

/**
 * The objects of each upload id that stay: its row's files, or everything while a piece session
 * that reserved the id is still putting its file together (a finish that failed after
 * completing it keeps it for the next try). Two queries per ID_BATCH ids, so that a run's
 * queries stay within what one invocation may make (about 110 for SCAN_LIMIT objects).
 */
async function keptOf(deps: Stores, ids: string[]): Promise<Map<string, Set<string> | "all">> {
  const kept = new Map<string, Set<string> | "all">();
  for (let i = 0; i < ids.length; i += ID_BATCH) {
    const batch = ids.slice(i, i + ID_BATCH);
    const [rows, sessions] = await Promise.all([uploadFilesOf(deps.db, batch), pieceSessionsMaking(deps.db, batch)]);
    for (const id of batch) kept.set(id, new Set());
    for (const session of sessions)
      if (session.fileUploadId && stillAssembling(session, deps.now())) kept.set(session.fileUploadId, "all");
    for (const row of rows)
      kept.set(
        row.id,
        new Set(row.filesRemovedAt === null ? [row.objectKey, row.thumbKey ?? "", ...ladderKeysOf(row)] : []),
      );
  }
  return kept;
}

const uploadIdOf = (key: string) => key.slice("uploads/".length, key.indexOf("/", "uploads/".length));

export async function sweepOrphanFiles(deps: Stores): Promise<number> {
  const cutoff = deps.now() - ORPHAN_GRACE_MS;
  const old: string[] = [];
  let seen = 0;
  for await (const object of uploadObjects(deps.bucket, `uploads/${randomBase62(10)}`)) {
    if (++seen > SCAN_LIMIT) break;
    // Only objects past the grace period can go: the others need no lookup.
    if (object.uploaded.getTime() < cutoff) old.push(object.key);
  }
  const kept = await keptOf(deps, [...new Set(old.map(uploadIdOf))]);
  const doomed = old.filter((key) => {
    const keep = kept.get(uploadIdOf(key))!;
    // A variant stays while the file it was made of does; a ladder's file while its row names it
    // (one an attempt left behind, which no row names, goes).
    return keep !== "all" && !keep.has(isLadderKey(key) ? key : (variantSource(key) ?? key));
  });
  for (let i = 0; i < doomed.length; i += 1000) await deps.bucket.delete(doomed.slice(i, i + 1000));
  return doomed.length;
}
