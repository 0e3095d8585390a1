import { PAGE_SIZE } from "../model/spec-limits";
import { notFound } from "../errors";
import { findOwnedUpload, listUploads } from "../storage/uploads";
import type { Stores } from "../storage/stores";

/**
 * One page of the account's uploads, newest first. A page past the last one is empty (its meta
 * still tells the real last_page), so clients that walk pages until `data` is empty stop cleanly.
 */
export async function listPage(deps: Stores, accountId: string, page: number) {
  const { rows, total } = await listUploads(deps.db, accountId, deps.now(), (page - 1) * PAGE_SIZE, PAGE_SIZE);
  return { rows, meta: { current_page: page, last_page: Math.max(1, Math.ceil(total / PAGE_SIZE)), total } };
}

export async function getOwnedUpload(deps: Stores, accountId: string, id: string) {
  const row = await findOwnedUpload(deps.db, accountId, id, deps.now());
  if (!row) throw notFound("No upload with that id on this account.");
  return row;
}
