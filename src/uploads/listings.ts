import { countListedUploads, listedUploads } from "../storage/uploads";
import type { Stores } from "../storage/stores";
import { lastPage } from "./pagination";

/**
 * The site's listings of uploads (listed in policy.ts): the gallery, the sitemap and the feed,
 * newest first. Each is a bounded read.
 */
export const GALLERY_PAGE_SIZE = 48;
/**
 * Uploads in one page of the sitemap (the first also lists the gallery): a tenth of the
 * protocol's 50,000 URLs a file, so that a page is a bounded read. /sitemap.xml is the index of
 * the pages (https://www.sitemaps.org/protocol.html#index).
 */
const SITEMAP_PAGE_URLS = 5_000;
export const FEED_ENTRIES = 50;

/** Page `number` of the gallery (from 1), and the number of its last page. */
export async function galleryPage(deps: Stores, number: number) {
  const now = deps.now();
  const [uploads, total] = await Promise.all([
    listedUploads(deps.db, now, GALLERY_PAGE_SIZE, (number - 1) * GALLERY_PAGE_SIZE),
    countListedUploads(deps.db, now),
  ]);
  return { uploads, last: lastPage(total, GALLERY_PAGE_SIZE) };
}

/** How many pages the sitemap has: at least one, which lists the gallery. */
export const sitemapPages = async (deps: Stores) =>
  lastPage(await countListedUploads(deps.db, deps.now()), SITEMAP_PAGE_URLS);

/** The uploads of sitemap page `number` (from 1); none past the last. */
export const sitemapPage = (deps: Stores, number: number) =>
  listedUploads(deps.db, deps.now(), SITEMAP_PAGE_URLS, (number - 1) * SITEMAP_PAGE_URLS);

/** The feed's uploads: the newest. */
export const feedUploads = (deps: Stores) => listedUploads(deps.db, deps.now(), FEED_ENTRIES);
