import { Hono, type Context } from "hono";
import type { AppEnv } from "../env";
import { ApiError, forbidden, notFound, unauthorized } from "../errors";
import { checkSignedUrl } from "../uploads/locks";
import { awaitsConversion } from "../uploads/process";
import { serveObject } from "../http/serve-object";
import { objectName } from "../storage/keys";
import type { UploadRow } from "../storage/schema";
import { findUpload, takeView } from "../storage/uploads";
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

/** A download from the start: what counts as a view (a player's later range requests do not). */
const fromStart = (c: Context<AppEnv>) => {
  const range = c.req.header("Range");
  return !range || /^bytes=0-/.test(range.trim());
};

/**
 * A locked upload's files need a valid signed link (src without one leads to the page, which
 * asks for the password); a view-limited upload's file counts a view per download from the
 * start and is not served once the limit is reached. Thumbnails show no file, so they do not count.
 */
async function guard(c: Context<AppEnv>, row: UploadRow, counts: boolean): Promise<Response | null> {
  if (row.passwordHash) {
    const check = await checkSignedUrl(c.env.LINK_SIGNING_SECRET ?? "", new URL(c.req.url), c.var.now());
    if (check === "missing") {
      if (counts && c.req.path.startsWith("/i/")) return c.redirect(uploadLinks(publicOrigin(c), row).direct, 302);
      throw unauthorized("This upload is password-protected: open its page and give the password.");
    }
    if (check === "expired") throw forbidden("This link has expired; open the upload's page for a new one.");
    if (check === "invalid") throw forbidden("This link is not valid.");
  }
  if (counts && row.maxViews !== null && c.req.method === "GET" && fromStart(c)) {
    if (!(await takeView(c.var.db, row.id))) throw new ApiError(410, "This upload has reached its view limit.");
  }
  return null;
}

/**
 * Public file URLs. The database row is consulted on every request, so a deleted or expired
 * upload stops being served at once, whatever remains in storage or caches downstream of us.
 */
export const files = new Hono<AppEnv>()
  // src: the current file, revalidated on every use so a replaced file shows at once.
  .get("/i/:id", async (c) => {
    const row = servable(await liveUpload(c));
    const guarded = await guard(c, row, true);
    if (guarded) return guarded;
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
    await guard(c, row, true);
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
    await guard(c, row, false);
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
