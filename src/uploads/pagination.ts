/**
 * Listings cut into pages, numbered from 1. An empty listing still has its first page, and a page
 * past the last is empty (its meta still tells the real last page), so clients that walk pages
 * until one is empty stop cleanly.
 */

/** How many pages `total` items fill, `size` a page: at least one. */
export const lastPage = (total: number, size: number) => Math.max(1, Math.ceil(total / size));

/** Where page `page` stands among the others, as every paged answer carries it (listPageMetaSchema). */
export const pageMeta = (page: number, total: number, size: number) => ({
  current_page: page,
  last_page: lastPage(total, size),
  total,
});
