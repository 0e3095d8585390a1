import { ApiError, notFound } from "../errors";
import { assertAcceptableText } from "../moderation/moderate";
import { hashPassword } from "./access/passwords";
import type { UploadRow } from "../model/schema";
import {
  findOwnedServingUpload,
  moveUploadFiles,
  updateUploadMeta,
  updateUploadMetaUnlessPlain,
  type UploadMetaPatch,
} from "../storage/uploads";
import { filesIndexable } from "../model/policy";
import { copyFiles } from "./serving/move-files";
import { removePreviousFiles } from "./serving/previous-files";
import type { Stores } from "../storage/stores";
import {
  focalColumns,
  focalOf,
  focalOnVideo,
  movesFocalPoint,
  removeCopiesAtPoint,
  type FocalPoint,
} from "./transforms/focal";

interface UploadChange extends Pick<UploadMetaPatch, "visibility" | "title" | "description"> {
  /** A new password, or null to remove it. */
  password?: string | null;
  /** A new view limit (the count starts afresh), or null to remove it. */
  max_views?: number | null;
  /** Seconds from now until the upload is deleted, or null for never. */
  expires_in?: number | null;
  /** A new focal point, or null to remove it. */
  focal?: FocalPoint | null;
}

/** Tries before a change that keeps meeting concurrent replaces or media jobs gives up. */
const ATTEMPTS = 3;

/** Whether the patch changes how the upload's files are served: locked, view-limited, indexable. */
const changesServing = (row: UploadRow, patch: UploadMetaPatch) =>
  patch.passwordHash !== undefined ||
  // Files are cached until the upload expires (immutableUntil): a new expiry needs new keys.
  patch.expiresAt !== undefined ||
  patch.maxViews !== undefined ||
  (patch.visibility !== undefined && filesIndexable({ visibility: patch.visibility }) !== filesIndexable(row));

/**
 * Records of a plainly served upload may be held anywhere (src/uploads/serving). A change to how
 * its files are served therefore moves them: copies under new keys, one conditional UPDATE that
 * points the row at them, then the originals removed before the answer, so every record of the
 * originals leads to a missing object. An upload not served plainly has no records of its
 * current files, and is changed in place as long as that is still so. Titles and descriptions
 * never move anything.
 */
export async function changeUpload(deps: Stores, accountId: string, id: string, change: UploadChange) {
  const { password, max_views, expires_in, focal, ...text } = change;
  await assertAcceptableText(deps.db, { title: text.title, description: text.description });
  const patch: UploadMetaPatch = { ...text };
  if (password !== undefined) patch.passwordHash = password === null ? null : await hashPassword(password);
  if (max_views !== undefined) Object.assign(patch, { maxViews: max_views, views: 0 });
  if (expires_in !== undefined) Object.assign(patch, expiryPatch(expires_in, deps.now()));
  if (focal !== undefined) Object.assign(patch, focalColumns(focal));

  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const current = await findOwnedServingUpload(deps.db, accountId, id, deps.now());
    if (!current) throw notFound("No upload with that id on this account.");
    if (focal) assertMayHaveFocalPoint(current.row);
    if (!changesServing(current.row, patch)) {
      const row = found(await updateUploadMeta(deps, accountId, id, patch, deps.now()));
      await removeCopiesAtOldPoint(deps.bucket, current.row, row);
      return row;
    }
    if (!current.plain) {
      const row = await updateUploadMetaUnlessPlain(deps, accountId, id, patch, deps.now());
      if (!row) continue;
      await removeCopiesAtOldPoint(deps.bucket, current.row, row);
      return row;
    }
    const moved = await copyFiles(deps.bucket, current.row);
    const row = await moveUploadFiles(deps, accountId, id, current.row, moved.files, patch, deps.now());
    if (!row) {
      await moved.discard();
      continue;
    }
    // The old point's copies went with the previous file's variants.
    await removePreviousFiles(deps.bucket, current.row);
    return row;
  }
  throw new ApiError(
    409,
    "The upload kept changing while it was being changed (a replace or a conversion). Try again.",
  );
}

function assertMayHaveFocalPoint(row: UploadRow) {
  if (row.type === "video") throw focalOnVideo();
}

/**
 * The copies cropped around a focal point the change moved, of an upload changed in place. A
 * focal point never moves the file: only the copies cut around it change, and a serving record
 * that still holds the old point serves such a copy only while it is stored (a copy it does not
 * find is planned again from the row, at the new point). Removed before the answer, as a change's
 * previous files are; a failure is logged, not answered (the change is made), and leaves them to
 * the cap, which deletes the least recently served first.
 */
async function removeCopiesAtOldPoint(bucket: R2Bucket, before: UploadRow, after: UploadRow) {
  const old = focalOf(before);
  if (!old || !movesFocalPoint(before, after)) return;
  await removeCopiesAtPoint(bucket, after.objectKey, old).catch((error) =>
    console.error(JSON.stringify({ upload: after.id, removeCopiesAtPoint: String(error) })),
  );
}

/**
 * Duplicate detection answers with the account's oldest upload of the file that never expires;
 * the `dedupHash` slot keeps two new uploads from both becoming that one. An upload given an
 * expiry gives its slot up. One whose expiry is removed is an answer again, by age, but does not
 * retake the slot, which another upload of the file may hold by now.
 */
function expiryPatch(expiresIn: number | null, now: number): UploadMetaPatch {
  if (expiresIn === null) return { expiresAt: null };
  return { expiresAt: now + expiresIn * 1000, dedupHash: null };
}

function found(row: UploadRow | undefined) {
  if (!row) throw notFound("No upload with that id on this account.");
  return row;
}
