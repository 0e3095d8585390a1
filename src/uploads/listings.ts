import { listedUploadTotal } from "../storage/listing-totals";
import { listedUploads } from "../storage/uploads";
import type { Stores } from "../storage/stores";
import { newestKey, newestKeyOf, pageWithNext } from "./cursors";
import { lastPage, pageStart, type PageAsked } from "./pagination";

/**
 * The site's listings of uploads (listed in policy.ts): the gallery, the sitemap and the feed,
 * newest first. Each is a bounded read, and none counts what it lists: their totals are kept
 * (src/storage/listing-totals.ts). The gallery's pages link onward by cursor, so a crawler
 * walking it reads only the pages it asks for.
 */
export const GALLERY_PAGE_SIZE = 48;
/**
 * Uploads in one page of the sitemap (the first also lists the gallery): a tenth of the
 * protocol's 50,000 URLs a file, so that a page is a bounded read. /sitemap.xml is the index of
 * the pages (https://www.sitemaps.org/protocol.html#index). The index names every page up front,
 * so a page is found by its number (OFFSET: page N reads the listed uploads before it too).
 */
const SITEMAP_PAGE_URLS = 5_000;
export const FEED_ENTRIES = 50;

/** The gallery's cursors (`/gallery?after=`). */
const GALLERY_LISTING = "gallery";

/**
 * A page of the gallery, by number (from 1) or by the cursor of the page before it: its uploads,
 * its number, the number of its last page, and the cursor of the next (null: none follows).
 */
export async function galleryPage(deps: Stores, asked: PageAsked) {
  const now = deps.now();
  const { page, start } = pageStart(asked, GALLERY_LISTING, GALLERY_PAGE_SIZE, newestKey);
  const [rows, total] = await Promise.all([
    listedUploads(deps.db, now, GALLERY_PAGE_SIZE + 1, start),
    listedUploadTotal(deps.db, now),
  ]);
  const next = pageWithNext(rows, GALLERY_PAGE_SIZE, { listing: GALLERY_LISTING, page: page + 1, keyOf: newestKeyOf });
  return { uploads: next.rows, number: page, last: lastPage(total, GALLERY_PAGE_SIZE), next: next.nextCursor };
}

/** How many pages the sitemap has: at least one, which lists the gallery. */
export const sitemapPages = async (deps: Stores) =>
  lastPage(await listedUploadTotal(deps.db, deps.now()), SITEMAP_PAGE_URLS);

/** The uploads of sitemap page `number` (from 1); none past the last. */
export const sitemapPage = (deps: Stores, number: number) =>
  listedUploads(deps.db, deps.now(), SITEMAP_PAGE_URLS, { offset: (number - 1) * SITEMAP_PAGE_URLS });

/** The feed's uploads: the newest. */
export const feedUploads = (deps: Stores) => listedUploads(deps.db, deps.now(), FEED_ENTRIES);
