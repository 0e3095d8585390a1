import { secretsEqual, sha256Hex } from "../crypto";
import { notFound } from "../errors";
import { uploadPrefix } from "../storage/keys";
import { deletePrefix } from "../storage/objects";
import type { UploadRow } from "../storage/schema";
import { deleteOwnedUpload, deleteUploadByToken, findUpload } from "../storage/uploads";
import type { UploadDeps } from "./upload-deps";

/**
 * The row goes first: from that moment every URL of the upload answers 404, whatever happens
 * to the file deletes that follow.
 */
export async function removeOwnedUpload(deps: UploadDeps, accountId: string, id: string) {
  const row = await deleteOwnedUpload(deps.db, accountId, id, deps.now());
  if (!row) throw notFound("No upload with that id on this account.");
  await removeFiles(deps.bucket, row);
}

export async function removeUploadByToken(deps: UploadDeps, id: string, token: string) {
  const row = await deleteUploadByToken(deps.db, id, await sha256Hex(token), deps.now());
  if (!row) throw invalidLink();
  await removeFiles(deps.bucket, row);
}

/** The upload a delete link points at, for the confirmation page; 404 for any invalid link. */
export async function uploadForDeleteLink(deps: UploadDeps, id: string, token: string) {
  const row = await findUpload(deps.db, id, deps.now());
  if (!row || !(await secretsEqual(await sha256Hex(token), row.deleteTokenHash))) throw invalidLink();
  return row;
}

const invalidLink = () => notFound("This delete link is not valid (already used, or never issued).");

export const removeFiles = (bucket: R2Bucket, row: UploadRow) =>
  deletePrefix(bucket, uploadPrefix(row.id), [row.objectKey, ...(row.thumbKey ? [row.thumbKey] : [])]);
