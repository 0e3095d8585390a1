import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";
import { badRequest } from "../errors";
import { keyLimiter } from "../limits/limiters";
import { afterResponse } from "./after-response";
import { database } from "../storage/db";

/**
 * D1 read replication for the API. A write runs on the primary; a read (GET) runs on whichever
 * replica has caught up with the latest of two bookmarks: the one the client sends back in
 * `X-D1-Bookmark`, and the one noted with its account's full key after the account's last write
 * (so clients that never send the header still read their own writes, with or without rate
 * limits). With neither, a read starts on the primary. The API key is always looked up on the
 * primary. Every API answer carries the bookmark its session reached.
 *
 * `first-primary` sends only a session's first query to the primary; later ones may run on a
 * replica, one that has caught up with everything the session saw or wrote before (D1's sessions
 * are sequentially consistent: https://developers.cloudflare.com/d1/worker-api/d1-database/#withsession,
 * https://developers.cloudflare.com/d1/best-practices/read-replication/). So a later read sees the
 * primary as it was at the first query, or newer, and the session's own writes; what another
 * request wrote after that first query it may not see. Writes always run on the primary, so a rule
 * that must hold against concurrent requests is a condition of the write itself (the tus writer's
 * lease and offset, the quota charges, the dedup index), never a read before it.
 */
export const BOOKMARK_HEADER = "X-D1-Bookmark";

/** What D1 hands out: four hex groups; anything else is refused rather than passed to D1. */
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

const isRead = (c: Context<AppEnv>) => c.req.method === "GET" || c.req.method === "HEAD";

/** The client's bookmark, if it sent one (400 when it is not a bookmark). */
function sentBookmark(c: Context<AppEnv>): string | null {
  const sent = c.req.header(BOOKMARK_HEADER)?.trim();
  if (!sent) return null;
  if (!BOOKMARK.test(sent))
    throw badRequest(`${BOOKMARK_HEADER} must be a bookmark from an earlier answer of this API.`);
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
 * there first (the session's first query), and a replica that has not yet seen a key replaced
 * would still accept the old one (the spec: regenerating a key invalidates the old one
 * immediately). A write keeps this session, whose later reads see at least what the key lookup
 * saw (above); a read moves to a session of its own once the account's last write is known
 * (accountSession).
 */
export const apiSession = createMiddleware<AppEnv>(async (c, next) => {
  // A malformed bookmark is refused before the key is looked at, as it always was.
  if (isRead(c)) sentBookmark(c);
  useSession(c, c.env.DB.withSession("first-primary"));
  await next();
  const reached = c.var.session.getBookmark();
  if (reached) c.header(BOOKMARK_HEADER, reached);
});

/**
 * An API operation's session, once identifyCaller knows the account. Its last write is noted in
 * its full key's Durable Object (src/limits/rate-limiter.ts), whatever RATE_LIMITS says. A read
 * runs from the later of that and the client's bookmark. A write is noted before its answer, so
 * the account's next read sees it; a read is noted only when nothing was, so later ones need not
 * go to the primary, and never when the client sent a bookmark (one from the far future would
 * hold back every later read).
 */
export const accountSession = createMiddleware<AppEnv>(async (c, next) => {
  const account = keyLimiter(c.env, c.var.caller.fullKeyHash);
  const read = isRead(c);
  const sent = read ? sentBookmark(c) : null;
  // The rate limits read it already, from the same object, unless they are off (null: none noted).
  const known = c.var.lastWrite;
  const noted = !read ? null : known !== undefined ? known : await account.notedBookmark();
  if (read) useSession(c, c.env.DB.withSession(later(sent, noted) ?? "first-primary"));
  await next();
  const reached = c.var.session.getBookmark();
  if (!reached) return;
  if (!read) await account.noteBookmark(reached);
  else if (noted === null && sent === null) afterResponse(c, "bookmark", account.noteBookmark(reached));
});

/**
 * For a way in whose reads must see every write made before the request (a tus upload's offset,
 * which only it writes): the session stays the one apiSession opened, whose first query ran on
 * the primary, so a HEAD sees every offset answered before it began; a write is noted as
 * accountSession notes it, so the account's later reads elsewhere see what was made.
 */
export const notedWrites = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  const reached = c.var.session.getBookmark();
  if (reached && !isRead(c)) await keyLimiter(c.env, c.var.caller.fullKeyHash).noteBookmark(reached);
});
