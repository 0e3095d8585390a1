import { PAGE_SIZE } from "../model/spec-limits";
import { notFound } from "../errors";
import { findOwnedUpload, listUploads } from "../storage/uploads";
import type { Stores } from "../storage/stores";
import { pageMeta } from "./pagination";
import { withPlaceholder } from "./placeholders";

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

/** The upload as a single read answers it: with its placeholder made now if it had none yet. */
export async function readOwnedUpload(deps: Stores, accountId: string, id: string) {
  return withPlaceholder(deps, await getOwnedUpload(deps, accountId, id));
}
