import type { Context } from "hono";
import type { AppEnv } from "../env";
import { afterResponse } from "./after-response";
import { presentedKey } from "./auth";
import { publicFor } from "./cache-control";

/** When the copy was made, by the app's clock; on the cached copy only, never sent. */
const MADE_AT = "X-Colo-Cache-Made-At";

/** GET or HEAD without credentials: an answer that may go to anyone who asks the same. */
const shareable = (c: Context<AppEnv>) =>
  (c.req.method === "GET" || c.req.method === "HEAD") &&
  !c.req.header("Authorization") &&
  !c.req.header("Cookie") &&
  presentedKey(c) === undefined;

/**
 * An answer kept for `seconds` in the colo's cache (the Workers Cache API) under `key`, its public
 * URL with only what changes the answer, so added query parameters cannot miss the cache. `make`
 * runs only when no usable copy is there; a copy is kept only of a 200 to a shareable request.
 *
 * A copy is used until `seconds` after it was made by the app's clock (the clock tests move), and
 * whoever gets it is told to keep it only for what is left of that: nothing served, by us or by
 * a browser, is older than `seconds`. Copies cannot be removed everywhere at once (each colo has
 * its own cache), so that bound is also how long a change can take to show.
 *
 * The Cache API has no effect on workers.dev (only on custom domains): there every request is
 * made afresh, so whatever `make` costs must be bounded by other means too.
 */
export async function fromColoCache(
  c: Context<AppEnv>,
  key: string,
  seconds: number,
  make: () => Promise<Response>,
): Promise<Response> {
  const cache = typeof caches === "undefined" || !shareable(c) ? undefined : caches.default;
  const now = c.var.now();
  if (cache) {
    const held = await cache.match(key).catch(() => undefined);
    const madeAt = Number(held?.headers.get(MADE_AT));
    const left = madeAt + seconds * 1000 - now;
    if (held && madeAt <= now && left > 0) {
      const answer = new Response(held.body, held);
      answer.headers.delete(MADE_AT);
      answer.headers.set("Cache-Control", publicFor(Math.floor(left / 1000)));
      return answer;
    }
    await held?.body?.cancel();
  }
  const response = await make();
  response.headers.set("Cache-Control", publicFor(seconds));
  if (cache && response.status === 200) {
    const copy = new Response(response.clone().body, response);
    copy.headers.set(MADE_AT, String(now));
    afterResponse(c, "colo cache", cache.put(key, copy));
  }
  return response;
}
