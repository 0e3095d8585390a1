import { z } from "zod";
import { PAGE_SIZE } from "../../model/spec-limits";
import { albumUploadsPage, countAlbumUploads } from "../../storage/album-uploads";
import { listAlbumsOf } from "../../storage/albums";
import type { Stores } from "../../storage/stores";
import { newestKey, newestKeyOf, pageWithNext } from "../cursors";
import { pageMeta, pageStart, type PageAsked } from "../pagination";
import { ALBUMS_PAGE_SIZE, getOwnedAlbum } from "./albums";

/**
 * The account's lists of albums (GET /api/albums) and of an album's uploads (GET
 * /api/albums/{id}/uploads): by page number, or by the cursor the previous page gave, which reads
 * only its page. An album's uploads go in its order, so their cursor carries the last one's place
 * in it (position, when added, id) and belongs to that album alone.
 */

/** An upload's place in its album's order, as a cursor carries it. */
export const albumOrderKey = z.tuple([
  z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER),
  z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  z.string().min(1).max(64),
]);

/** What an album's uploads are read with: the row and its place in the album's order. */
export const albumOrderOf = (row: { upload: { id: string }; position: number; addedAt: number }) =>
  [row.position, row.addedAt, row.upload.id] as const;

const ALBUMS_LISTING = "albums";
const albumListing = (albumId: string) => `album:${albumId}`;

/** One page of the account's albums, newest first, with the meta of GET /api's list. */
export async function listAlbums(deps: Stores, accountId: string, asked: PageAsked) {
  const { page, start } = pageStart(asked, ALBUMS_LISTING, ALBUMS_PAGE_SIZE, newestKey);
  const { rows, total } = await listAlbumsOf(deps.db, accountId, deps.now(), {
    limit: ALBUMS_PAGE_SIZE + 1,
    ...start,
  });
  const next = pageWithNext(rows, ALBUMS_PAGE_SIZE, {
    listing: ALBUMS_LISTING,
    page: page + 1,
    keyOf: (row) => newestKeyOf(row.album),
  });
  return { rows: next.rows, meta: pageMeta(page, total, ALBUMS_PAGE_SIZE, next.nextCursor) };
}

/**
 * One page of the album's live uploads in its order (PAGE_SIZE, as GET /api), with that list's
 * meta; a page past the last is empty. The total counts the album's uploads (an index range of
 * the album: its size, not the account's).
 */
export async function albumUploadsOf(deps: Stores, accountId: string, id: string, asked: PageAsked) {
  await getOwnedAlbum(deps, accountId, id);
  const now = deps.now();
  const { page, start } = pageStart(asked, albumListing(id), PAGE_SIZE, albumOrderKey);
  const [rows, total] = await Promise.all([
    albumUploadsPage(deps.db, id, { limit: PAGE_SIZE + 1, ...start, now }),
    countAlbumUploads(deps.db, id, now),
  ]);
  const next = pageWithNext(rows, PAGE_SIZE, { listing: albumListing(id), page: page + 1, keyOf: albumOrderOf });
  return { rows: next.rows.map((row) => row.upload), meta: pageMeta(page, total, PAGE_SIZE, next.nextCursor) };
}
