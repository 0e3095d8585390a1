import { sql, type AnyColumn, type SQL } from "drizzle-orm";

/**
 * Where a page of a listing starts: past `offset` rows (the spec's `page`, which reads every row
 * it skips), or right after the row whose sort key is `after` (a keyset: the listing's index
 * starts there, and no row before it is read).
 */
export type PageStart<K> = { offset: number } | { after: K };

/** A row's place in a listing newest first: when it was made, then its id (which breaks ties). */
export type NewestKey = readonly [createdAt: number, id: string];

/** The rows of a newest-first listing (created, id descending) that come after `start`'s key, if it has one. */
export const newestAfter = (created: AnyColumn, id: AnyColumn, start: PageStart<NewestKey>): SQL | undefined =>
  "after" in start ? sql`(${created}, ${id}) < (${start.after[0]}, ${start.after[1]})` : undefined;

/** How many rows the page skips: none when it starts after a key. */
export const skipped = (start: PageStart<unknown>) => ("offset" in start ? start.offset : 0);
