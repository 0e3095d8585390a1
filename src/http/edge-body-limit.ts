import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";
import { tooLarge } from "../errors";
import { settingsOf } from "../settings";

/**
 * Cloudflare's edge refuses a request whose body is over the zone's plan's limit (100 MB on Free
 * and Pro, 200 MB on Business) with its own 413 before the Worker runs
 * (https://developers.cloudflare.com/workers/platform/limits/#request-limits); `wrangler dev`
 * has no such limit. Refusing the declared Content-Length here too (EDGE_MAX_BODY_BYTES) makes a
 * local run answer as a deployment would, before a byte of the body is read.
 */
export const edgeBodyLimit = createMiddleware<AppEnv>(async (c, next) => {
  const limit = settingsOf(c.env).edgeMaxBodyBytes;
  if (Number(c.req.header("Content-Length") ?? "0") > limit) {
    throw tooLarge(
      `A request's body may be at most ${limit / 1_000_000} MB: Cloudflare's edge refuses larger ones. ` +
        "Send the file in several requests (tus clients: set chunkSize, such as 50 MiB).",
    );
  }
  await next();
});
