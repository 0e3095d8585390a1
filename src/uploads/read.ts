import { PAGE_SIZE } from "../model/spec-limits";
import { notFound } from "../errors";
import { findOwnedUpload, listUploads } from "../storage/uploads";
import type { Stores } from "../storage/stores";
import { pageMeta } from "./pagination";

/** One page of the account's uploads, newest first (a page past the last one is empty). */
export async function listPage(deps: Stores, accountId: string, page: number) {
  const { rows, total } = await listUploads(deps.db, accountId, deps.now(), (page - 1) * PAGE_SIZE, PAGE_SIZE);
  return { rows, meta: pageMeta(page, total, PAGE_SIZE) };
}

export async function getOwnedUpload(deps: Stores, accountId: string, id: string) {
  const row = await findOwnedUpload(deps.db, accountId, id, deps.now());
  if (!row) throw notFound("No upload with that id on this account.");
  return row;
}
