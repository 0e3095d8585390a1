import { z } from "zod";
import { base64Url, fromBase64Url } from "../bytes";
import { unprocessable } from "../errors";

/**
 * Cursors: a place in a listing handed to clients as an opaque token (a list answer's
 * `meta.next_cursor`, the gallery's `?after=`). It names the listing it belongs to, the number of
 * the page it leads to (so that page still says where it stands without counting), and the sort
 * key of the last row before that page, which the page is read after through the listing's
 * index: a page anywhere in a long list reads only its own rows, where `page` reads every row it
 * skips. base64url of a JSON array: opaque, so clients pass it on as given rather than build
 * one. Not signed: it says no more than the page before it showed, and a made-up one can only
 * start the caller's own list somewhere (or number its page wrongly, for that caller alone).
 */
export interface Cursor<K> {
  page: number;
  key: K;
}

/** A key as a cursor carries it: numbers and strings. */
type KeyParts = readonly (string | number)[];

/** The key of a listing newest first: created_at, then the id. */
export const newestKey = z.tuple([z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), z.string().min(1).max(64)]);

/** A row's newest-first key. */
export const newestKeyOf = (row: { createdAt: number; id: string }) => [row.createdAt, row.id] as const;

const TOKEN = /^[A-Za-z0-9_-]{1,512}$/;

/** The token of a place in `listing` (its names and keys are ASCII: ids are base62, so btoa takes them). */
export function cursorToken(listing: string, page: number, key: KeyParts): string {
  return base64Url(JSON.stringify([listing, page, ...key]));
}

function decode(token: string): unknown {
  if (!TOKEN.test(token)) return undefined;
  try {
    return JSON.parse(fromBase64Url(token));
  } catch {
    return undefined;
  }
}

const parts = z.tuple([z.string(), z.number().int().min(2).max(Number.MAX_SAFE_INTEGER)]).rest(z.unknown());

/**
 * The cursor `token` of `listing`, its key read by `key`; a token that is not one, or is one of
 * another listing (another album's, the gallery's), is a 422 as a bad page is.
 */
export function readCursor<K extends z.ZodType>(listing: string, token: string, key: K): Cursor<z.output<K>> {
  const read = parts.safeParse(decode(token));
  const keyRead = read.success && read.data[0] === listing ? key.safeParse(read.data.slice(2)) : undefined;
  if (!read.success || !keyRead?.success) throw unprocessable("cursor: not a cursor of this listing.");
  return { page: read.data[1], key: keyRead.data };
}

/**
 * A page read with one row more than it shows (`size + 1`): the rows it shows, and the cursor of
 * the page after it, or null when none follows (no count needed to know).
 */
export function pageWithNext<R>(
  rows: R[],
  size: number,
  next: { listing: string; page: number; keyOf: (row: R) => KeyParts },
) {
  const shown = rows.slice(0, size);
  const last = shown[shown.length - 1];
  const cursor = rows.length > size && last ? cursorToken(next.listing, next.page, next.keyOf(last)) : null;
  return { rows: shown, nextCursor: cursor };
}
