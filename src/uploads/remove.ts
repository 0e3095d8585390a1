import { secretsEqual, sha256Hex } from "../crypto";
import { notFound } from "../errors";
import { deleteOwnedUpload, deleteOwnedUploads, deleteUploadByToken } from "../storage/upload-deletions";
import { findUpload } from "../storage/uploads";
import { removeFiles } from "./serving/previous-files";
import type { Stores } from "../storage/stores";
import type { DeletedBy } from "../model/webhook-events";

/**
 * The row goes first: from that moment every URL read from the database answers 404. The files
 * follow before the answer, which makes every record of them elsewhere harmless.
 */
export async function removeOwnedUpload(deps: Stores, accountId: string, id: string) {
  const row = await deleteOwnedUpload(deps, accountId, id, deps.now());
  if (!row) throw notFound("No upload with that id on this account.");
  await removeFiles(deps.bucket, [row]);
}

/**
 * Removes those of `ids` that are live uploads of the account, each as removeOwnedUpload removes
 * one (rows first, then files), in one batch of statements and a few R2 calls for all of them;
 * the ones already gone are skipped. `deletedBy` is what their upload.deleted events say (album:
 * an album deleted with its uploads). Returns how many were removed.
 */
export async function removeOwnedUploads(
  deps: Stores,
  accountId: string,
  ids: readonly string[],
  deletedBy: DeletedBy,
) {
  if (ids.length === 0) return 0;
  const rows = await deleteOwnedUploads(deps, accountId, ids, deletedBy, deps.now());
  await removeFiles(deps.bucket, rows);
  return rows.length;
}

export async function removeUploadByToken(deps: Stores, id: string, token: string) {
  const row = await deleteUploadByToken(deps, id, await sha256Hex(token), deps.now());
  if (!row) throw invalidLink();
  await removeFiles(deps.bucket, [row]);
}

/** The upload a delete link points at, for the confirmation page; 404 for any invalid link. */
export async function uploadForDeleteLink(deps: Stores, id: string, token: string) {
  const row = await findUpload(deps.db, id, deps.now());
  if (!row || !(await secretsEqual(await sha256Hex(token), row.deleteTokenHash))) throw invalidLink();
  return row;
}

const invalidLink = () => notFound("This delete link is not valid (already used, or never issued).");
