import type { Context } from "hono";
import type { AppEnv } from "../env";
import { badRequest } from "../errors";
import { afterResponse } from "./after-response";
import { database } from "../storage/db";

/**
 * D1 read replication for the API. A write runs on the primary; a read (GET) runs on whichever
 * replica has caught up with the latest of two bookmarks: the one the client sends back in
 * `X-D1-Bookmark`, and the one noted in its account's full-key limiter after the account's last
 * write (so clients that never send the header still read their own writes). With neither, a
 * read goes to the primary. The API key is always looked up on the primary. Every API answer
 * carries the bookmark its session reached.
 */
export const BOOKMARK_HEADER = "X-D1-Bookmark";

/** What D1 hands out: four hex groups; anything else is refused rather than passed to D1. */
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

export const isRead = (c: Context<AppEnv>) => c.req.method === "GET" || c.req.method === "HEAD";

/** The client's bookmark, if it sent one (400 when it is not a bookmark). */
export function sentBookmark(c: Context<AppEnv>): string | null {
  const sent = c.req.header(BOOKMARK_HEADER)?.trim();
  if (!sent) return null;
  if (!BOOKMARK.test(sent)) throw badRequest(`${BOOKMARK_HEADER} must be a bookmark from an earlier answer of this API.`);
  return sent;
}

/** Bookmarks sort from oldest to newest. */
const later = (a: string | null, b: string | null) => (a === null ? b : b === null || a > b ? a : b);

/** Runs the rest of the request's queries in `session`. */
function useSession(c: Context<AppEnv>, session: D1DatabaseSession) {
  c.set("session", session);
  c.set("db", database(session));
}

/**
 * Opens the request's session on the primary, whatever the method: the API key is looked up
 * there first, and a replica that has not yet seen a key replaced would still accept the old one
 * (the spec: regenerating a key invalidates the old one immediately). A write stays on it; a
 * read moves to a replica once the API gate knows the account's last write (inAccountSession).
 */
export async function apiSession(c: Context<AppEnv>, next: () => Promise<void>) {
  // A malformed bookmark is refused before the key is looked at, as it always was.
  if (isRead(c)) sentBookmark(c);
  useSession(c, c.env.DB.withSession("first-primary"));
  await next();
  const reached = c.var.session.getBookmark();
  if (reached) c.header(BOOKMARK_HEADER, reached);
}

/**
 * The rest of an authenticated API request. `noted` is the account's last write as its full
 * key's limiter keeps it (null: none, or limits off) and `note` keeps a later one there. A read
 * runs from the later of `noted` and the client's bookmark. A write is noted before its answer,
 * so the account's next read sees it; a read is noted only when nothing was, so later ones need
 * not go to the primary, and never when the client sent a bookmark (one from the far future
 * would hold back every later read).
 */
export async function inAccountSession(
  c: Context<AppEnv>,
  noted: string | null,
  note: ((bookmark: string) => Promise<void>) | null,
  next: () => Promise<void>,
) {
  const read = isRead(c);
  const sent = read ? sentBookmark(c) : null;
  if (read) useSession(c, c.env.DB.withSession(later(sent, noted) ?? "first-primary"));
  await next();
  const reached = c.var.session.getBookmark();
  if (!note || !reached) return;
  if (!read) await note(reached);
  else if (noted === null && sent === null) afterResponse(c, "bookmark", note(reached));
}
