import type { z } from "zod";
import { readCursor } from "./cursors";

/**
 * Listings cut into pages, numbered from 1. An empty listing still has its first page, and a page
 * past the last is empty (its meta still tells the real last page), so clients that walk pages
 * until one is empty stop cleanly.
 */

/** How many pages `total` items fill, `size` a page: at least one. */
export const lastPage = (total: number, size: number) => Math.max(1, Math.ceil(total / size));

/**
 * Where page `page` stands among the others, as every paged answer carries it (listPageMetaSchema),
 * with the cursor of the page after it (null: none follows).
 */
export const pageMeta = (page: number, total: number, size: number, nextCursor: string | null) => ({
  current_page: page,
  last_page: lastPage(total, size),
  total,
  next_cursor: nextCursor,
});

/** Which page a client asks for: by its number (the spec's `page`) or by a cursor a list answer gave. */
export type PageAsked = { page: number } | { cursor: string };

/**
 * Where the page asked of `listing` starts and its number: past the pages before it, or right
 * after the key its cursor carries (a 422 when the cursor is not one of this listing's).
 */
export function pageStart<K extends z.ZodType>(asked: PageAsked, listing: string, size: number, key: K) {
  if ("page" in asked) return { page: asked.page, start: { offset: (asked.page - 1) * size } };
  const cursor = readCursor(listing, asked.cursor, key);
  return { page: cursor.page, start: { after: cursor.key as z.output<K> } };
}
