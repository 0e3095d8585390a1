import { searchUploads, type UploadFilters } from "../storage/upload-search";
import type { Stores } from "../storage/stores";
import { getOwnedAlbum } from "./albums/albums";
import { cursorToken, newestKey, newestKeyOf, readCursor } from "./cursors";

/** The dashboard's grid: uploads a page. */
export const SEARCH_PAGE_SIZE = 48;
/**
 * Uploads of the account's list one search reads at most, matching or not: a search for a title
 * that few uploads have goes through a long list a window at a time, each page a bounded read.
 */
export const SEARCH_WINDOW = 1000;
const SEARCH_LISTING = "search";

export type { UploadFilters };

/**
 * A page of the account's uploads that match `filters`, newest first, from the start or from
 * `cursor`: up to SEARCH_PAGE_SIZE of them, and the cursor to go on from (null: the list is
 * done). A page may hold fewer than its size and still have a next one, when its window of the
 * list ran out first. An album filter names one of the account's albums (another's is a 404).
 */
export async function searchPage(deps: Stores, accountId: string, filters: UploadFilters, cursor?: string) {
  if (filters.album) await getOwnedAlbum(deps, accountId, filters.album);
  const at = cursor ? readCursor(SEARCH_LISTING, cursor, newestKey) : { page: 1, key: null };
  const start = at.key ? { after: at.key } : { offset: 0 };
  const found = await searchUploads(
    deps.db,
    accountId,
    deps.now(),
    filters,
    start,
    SEARCH_WINDOW,
    SEARCH_PAGE_SIZE + 1,
  );
  const rows = found.rows.slice(0, SEARCH_PAGE_SIZE);
  const last = rows[rows.length - 1];
  const nextKey = found.rows.length > SEARCH_PAGE_SIZE && last ? newestKeyOf(last) : found.windowEnd;
  return { rows, page: at.page, next: nextKey ? cursorToken(SEARCH_LISTING, at.page + 1, nextKey) : null };
}
