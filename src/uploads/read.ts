import { PAGE_SIZE } from "../model/spec-limits";
import { notFound } from "../errors";
import { findOwnedUpload, listUploads } from "../storage/uploads";
import type { Stores } from "../storage/stores";
import { newestKey, newestKeyOf, pageWithNext } from "./cursors";
import { pageMeta, pageStart, type PageAsked } from "./pagination";
import { withPlaceholder } from "./placeholders";

/** The cursors of GET /api (the account's uploads). */
const UPLOADS_LISTING = "uploads";

/**
 * One page of the account's uploads, newest first (a page past the last one is empty), by number
 * or by cursor, with the cursor of the next. Its total is the account's kept count.
 */
export async function listPage(deps: Stores, accountId: string, asked: PageAsked) {
  const { page, start } = pageStart(asked, UPLOADS_LISTING, PAGE_SIZE, newestKey);
  const { rows, total } = await listUploads(deps.db, accountId, deps.now(), start, PAGE_SIZE + 1);
  const next = pageWithNext(rows, PAGE_SIZE, { listing: UPLOADS_LISTING, page: page + 1, keyOf: newestKeyOf });
  return { rows: next.rows, meta: pageMeta(page, total, PAGE_SIZE, next.nextCursor) };
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
