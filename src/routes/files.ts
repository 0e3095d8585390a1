import { Hono, type Context } from "hono";
import type { AppEnv } from "../env";
import { ApiError, notFound } from "../errors";
import { awaitsConversion } from "../uploads/process";
import { serveObject } from "../http/serve-object";
import { objectName } from "../storage/keys";
import type { UploadRow } from "../storage/schema";
import { findUpload } from "../storage/uploads";
import { uploadLinks } from "../uploads/links";
import { publicOrigin } from "../http/request-info";
import { methodNotAllowed } from "./method-not-allowed";

const YEAR = 31_536_000;

/** Stored objects never change under a name, so they may be cached until the upload expires. */
function immutableFor(row: UploadRow, now: number): string {
  const seconds = row.expiresAt === null ? YEAR : Math.max(0, Math.floor((row.expiresAt - now) / 1000));
  return `public, max-age=${Math.min(seconds, YEAR)}, immutable`;
}

const robots = (row: UploadRow): Record<string, string> =>
  row.visibility === "public" ? {} : { "X-Robots-Tag": "noindex" };

async function liveUpload(c: Context<AppEnv>) {
  const row = await findUpload(c.var.db, c.req.param("id")!, c.var.now());
  if (!row) throw notFound("No such upload.");
  return row;
}

/** An upload still in a format it is converted from carries its camera metadata: never served. */
function servable(row: UploadRow) {
  if (awaitsConversion(row)) {
    throw new ApiError(503, "This upload is still being converted; try again in a few seconds.", { "Retry-After": "5" });
  }
  return row;
}

/**
 * Public file URLs. The database row is consulted on every request, so a deleted or expired
 * upload stops being served at once, whatever remains in storage or caches downstream of us.
 */
export const files = new Hono<AppEnv>()
  // src: the current file, revalidated on every use so a replaced file shows at once.
  .get("/i/:id", async (c) => {
    const row = servable(await liveUpload(c));
    return serveObject(c, {
      key: row.objectKey,
      size: row.size,
      etag: row.etag,
      mime: row.mime,
      cacheControl: "public, no-cache",
      filename: `${row.id}.${objectName(row.objectKey).split(".").pop()}`,
      headers: robots(row),
    });
  })
  .all("/i/:id", methodNotAllowed("GET"))
  // path: one stored object. A name that is no longer current (the file was converted or
  // replaced) redirects to src rather than breaking links that kept `path`.
  .get("/f/:id/:name", async (c) => {
    const row = servable(await liveUpload(c));
    if (objectName(row.objectKey) !== c.req.param("name")) return c.redirect(uploadLinks(publicOrigin(c), row).src, 302);
    return serveObject(c, {
      key: row.objectKey,
      size: row.size,
      etag: row.etag,
      mime: row.mime,
      cacheControl: immutableFor(row, c.var.now()),
      filename: c.req.param("name"),
      headers: robots(row),
    });
  })
  .all("/f/:id/:name", methodNotAllowed("GET"))
  // thumb: a WebP made from the current file; a new file gets a new thumbnail name.
  .get("/t/:id/:name", async (c) => {
    const row = await liveUpload(c);
    if (!row.thumbKey || objectName(row.thumbKey) !== c.req.param("name")) throw notFound("No such thumbnail.");
    const head = await c.env.FILES.head(row.thumbKey);
    if (!head) throw notFound("No such thumbnail.");
    return serveObject(c, {
      key: row.thumbKey,
      size: head.size,
      etag: head.httpEtag,
      mime: "image/webp",
      cacheControl: immutableFor(row, c.var.now()),
      filename: c.req.param("name"),
      headers: robots(row),
    });
  })
  .all("/t/:id/:name", methodNotAllowed("GET"));
