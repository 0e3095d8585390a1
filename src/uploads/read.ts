import { PAGE_SIZE } from "../spec-limits";
import { notFound } from "../errors";
import { findOwnedUpload, listUploads } from "../storage/uploads";
import type { UploadDeps } from "./upload-deps";

/**
 * One page of the account's uploads, newest first. A page past the last one is empty (its meta
 * still tells the real last_page), so clients that walk pages until `data` is empty stop cleanly.
 */
export async function listPage(deps: UploadDeps, accountId: string, page: number) {
  const { rows, total } = await listUploads(deps.db, accountId, deps.now(), (page - 1) * PAGE_SIZE, PAGE_SIZE);
  return { rows, meta: { current_page: page, last_page: Math.max(1, Math.ceil(total / PAGE_SIZE)), total } };
}

export async function getOwnedUpload(deps: UploadDeps, accountId: string, id: string) {
  const row = await findOwnedUpload(deps.db, accountId, id, deps.now());
  if (!row) throw notFound("No upload with that id on this account.");
  return row;
}
