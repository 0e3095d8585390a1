import { shownInAlbums } from "../../model/policy";
import type { AlbumRow, UploadRow } from "../../model/schema";
import { albumCoverRows } from "../../storage/album-pages";
import { albumUploadsPage, countAlbumUploads } from "../../storage/album-uploads";
import { findAlbum, publicAlbumsPage, type PageOf } from "../../storage/albums";
import { publicAlbumTotal } from "../../storage/listing-totals";
import type { Stores } from "../../storage/stores";
import { newestKey, newestKeyOf, pageWithNext } from "../cursors";
import { lastPage, pageStart, type PageAsked } from "../pagination";
import { albumOrderKey, albumOrderOf } from "./lists";

/**
 * What the public routes read of albums: an album's page (its uploads as visitors may see them,
 * policy's shownInAlbums), its cover, and the listings of public albums. Whether a visitor may see
 * the album at all (private, locked) is the page's to decide; what it shows of each upload is
 * decided by the upload's own state, never by the album's.
 */

export type AlbumForPage = AlbumRow;

/** Uploads on one page of an album, as tiles in the gallery. */
export const ALBUM_PAGE_SIZE = 48;
/** Albums on one page of the gallery of albums. */
export const ALBUM_GALLERY_PAGE_SIZE = 48;
/** Album pages in one page of the sitemap, as for uploads. */
const SITEMAP_PAGE_URLS = 5_000;
const FEED_ENTRIES = 50;

/** The album `id`, whoever owns it and whatever its visibility; null when there is none. */
export async function albumForPage(deps: Stores, id: string): Promise<AlbumForPage | null> {
  return (await findAlbum(deps.db, id)) ?? null;
}

/**
 * A page of the uploads the album's page shows, in its order, by number (from 1) or by the cursor
 * of the page before it: the uploads, the page's number, how many there are and the last page,
 * and the cursor of the next page (null: none follows).
 */
export async function albumPageUploads(deps: Stores, albumId: string, asked: PageAsked) {
  const now = deps.now();
  const only = shownInAlbums.where(now);
  const listing = `album-page:${albumId}`;
  const { page, start } = pageStart(asked, listing, ALBUM_PAGE_SIZE, albumOrderKey);
  const [rows, total] = await Promise.all([
    albumUploadsPage(deps.db, albumId, { now, only, limit: ALBUM_PAGE_SIZE + 1, ...start }),
    countAlbumUploads(deps.db, albumId, now, only),
  ]);
  const next = pageWithNext(rows, ALBUM_PAGE_SIZE, { listing, page: page + 1, keyOf: albumOrderOf });
  const uploads = next.rows.map((row) => row.upload);
  return { uploads, number: page, total, last: lastPage(total, ALBUM_PAGE_SIZE), next: next.nextCursor };
}

/** Each album's cover as visitors may see it (src/storage/album-pages.ts), by album id. */
export const albumCovers = (deps: Stores, albumIds: readonly string[]): Promise<Map<string, UploadRow>> =>
  albumCoverRows(deps.db, albumIds, deps.now());

/** The album's cover, or null. */
export const albumCover = async (deps: Stores, albumId: string): Promise<UploadRow | null> =>
  (await albumCovers(deps, [albumId])).get(albumId) ?? null;

/** Public albums, newest first, with their covers. */
async function publicAlbums(deps: Stores, page: PageOf) {
  const rows = await publicAlbumsPage(deps.db, deps.now(), page);
  const list = rows.map((row) => row.album);
  const covers = await albumCovers(
    deps,
    list.filter((album) => album.passwordHash === null).map((album) => album.id),
  );
  return list.map((album) => ({ album, cover: covers.get(album.id) ?? null }));
}

/**
 * A page of the gallery of public albums, by number or by the cursor of the page before it, its
 * number, its last page, and the cursor of the next (null: none follows).
 */
export async function albumGalleryPage(deps: Stores, asked: PageAsked) {
  const { page, start } = pageStart(asked, "album-gallery", ALBUM_GALLERY_PAGE_SIZE, newestKey);
  const [rows, total] = await Promise.all([
    publicAlbums(deps, { limit: ALBUM_GALLERY_PAGE_SIZE + 1, ...start }),
    publicAlbumTotal(deps.db),
  ]);
  const next = pageWithNext(rows, ALBUM_GALLERY_PAGE_SIZE, {
    listing: "album-gallery",
    page: page + 1,
    keyOf: (row) => newestKeyOf(row.album),
  });
  return { albums: next.rows, number: page, last: lastPage(total, ALBUM_GALLERY_PAGE_SIZE), next: next.nextCursor };
}

/** How many sitemap pages the public albums fill (none when there is none). */
export const albumSitemapPages = async (deps: Stores) =>
  Math.ceil((await publicAlbumTotal(deps.db)) / SITEMAP_PAGE_URLS);

/** The public albums of album sitemap page `number` (from 1). */
export const albumSitemapPage = async (deps: Stores, number: number) =>
  (
    await publicAlbumsPage(deps.db, deps.now(), { limit: SITEMAP_PAGE_URLS, offset: (number - 1) * SITEMAP_PAGE_URLS })
  ).map((row) => row.album);

/** The feed's public albums: the newest, with their covers. */
export const feedAlbums = (deps: Stores) => publicAlbums(deps, { limit: FEED_ENTRIES, offset: 0 });
