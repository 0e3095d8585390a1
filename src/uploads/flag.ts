import { notFound } from "../errors";
import { recordFlaggedContent } from "../storage/moderation";
import { deleteUploadsWithContent } from "../storage/upload-deletions";
import { findUpload } from "../storage/uploads";
import type { Stores } from "../storage/stores";
import { removeFilesOfEach } from "./serving/previous-files";

/**
 * An operator flags an upload: the hash of its bytes (as they were uploaded) is recorded first,
 * so no new copy can slip in, then every upload of those bytes, whoever uploaded them, is taken
 * down with its files, as a delete takes down one. The rows are gone whatever happens to the
 * files, so the flag succeeds; files that could not be removed yet are named in the answer
 * (removeFilesOfEach says what becomes of them).
 */
export async function flagUpload(deps: Stores, id: string, reason: string | null) {
  const upload = await findUpload(deps.db, id, deps.now());
  if (!upload) throw notFound("No such upload.");
  await recordFlaggedContent(deps.db, { contentHash: upload.contentHash, uploadId: id, reason, createdAt: deps.now() });
  const removed = await deleteUploadsWithContent(deps, upload.contentHash, deps.now());
  const left = await removeFilesOfEach(deps.bucket, removed);
  return { id, content_hash: upload.contentHash, removed: removed.map((row) => row.id), files_not_removed: left };
}
