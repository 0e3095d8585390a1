import { Hono, type Context } from "hono";
import type { AppEnv } from "../env";
import { ApiError, forbidden, notFound, unauthorized } from "../errors";
import { immutableUntil, NO_STORE, REVALIDATE } from "../http/cache-control";
import { checkSignedUrl } from "../uploads/access/signed-links";
import { awaitsConversion } from "../uploads/media-jobs/webp-policy";
import { serveObject } from "../http/serve-object";
import { objectName } from "../storage/keys";
import type { UploadRow } from "../storage/schema";
import { findUpload, takeView } from "../storage/uploads";
import { uploadLinks } from "../uploads/public-urls";
import { publicOrigin } from "../http/request-info";
import { settingsOf } from "../settings";
import { methodNotAllowed } from "./method-not-allowed";

/**
 * A locked or view-limited upload's files are kept by no cache: a cached copy would outlive the
 * signed link's expiry or the last view. Others: src is revalidated on every use (a replaced file
 * shows at once); a stored object never changes under its name, so path and thumb are immutable.
 */
function caching(row: UploadRow, url: "src" | "stored", now: number): string {
  if (row.passwordHash !== null || row.maxViews !== null) return NO_STORE;
  return url === "src" ? REVALIDATE : immutableUntil(row.expiresAt, now);
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

const usedUp = () => new ApiError(410, "This upload has reached its view limit.");

/**
 * A locked upload's files need a valid signed link (src without one leads to the page, which
 * asks for the password). A view-limited upload whose views are used up answers 410 to every
 * request for its files, whatever the method, range or validators.
 */
async function guard(c: Context<AppEnv>, row: UploadRow, url: "src" | "stored"): Promise<Response | null> {
  if (row.passwordHash) {
    const check = await checkSignedUrl(settingsOf(c.env).linkSigningSecret, new URL(c.req.url), c.var.now());
    if (check === "missing") {
      if (url === "src") {
        c.header("Cache-Control", NO_STORE);
        return c.redirect(uploadLinks(publicOrigin(c), row).direct, 302);
      }
      throw unauthorized("This upload is password-protected: open its page and give the password.");
    }
    if (check === "expired") throw forbidden("This link has expired; open the upload's page for a new one.");
    if (check === "invalid") throw forbidden("This link is not valid.");
  }
  if (row.maxViews !== null && row.views >= row.maxViews) throw usedUp();
  return null;
}

/**
 * A view is a download that starts at the first byte, decided on what is actually sent: a
 * malformed, multiple or stale (If-Range) range is answered with the whole file and counts; a
 * player's later range requests, HEAD and 304s do not. Thumbnails show no file and never count.
 */
const countingViews = (c: Context<AppEnv>, row: UploadRow) =>
  row.maxViews === null
    ? undefined
    : async ({ fromStart }: { fromStart: boolean }) => {
        if (fromStart && !(await takeView(c.var.db, row.id))) throw usedUp();
      };

/** The upload's current file, as `src` or under its stored name (`path`). */
const serveUploadFile = (c: Context<AppEnv>, row: UploadRow, url: "src" | "stored", filename: string) =>
  serveObject(c, {
    key: row.objectKey,
    size: row.size,
    etag: row.etag,
    mime: row.mime,
    cacheControl: caching(row, url, c.var.now()),
    filename,
    headers: robots(row),
    beforeBody: countingViews(c, row),
  });

/**
 * Public file URLs. The database row is consulted on every request, so a deleted or expired
 * upload stops being served at once, whatever remains in storage or caches downstream of us.
 */
export const files = new Hono<AppEnv>()
  // src: the current file, revalidated on every use so a replaced file shows at once.
  .get("/i/:id", async (c) => {
    const row = servable(await liveUpload(c));
    const guarded = await guard(c, row, "src");
    if (guarded) return guarded;
    return serveUploadFile(c, row, "src", `${row.id}.${objectName(row.objectKey).split(".").pop()}`);
  })
  .all("/i/:id", methodNotAllowed("GET"))
  // path: one stored object. A name that is no longer current (the file was converted or
  // replaced) redirects to src rather than breaking links that kept `path`.
  .get("/f/:id/:name", async (c) => {
    const row = servable(await liveUpload(c));
    if (objectName(row.objectKey) !== c.req.param("name")) return c.redirect(uploadLinks(publicOrigin(c), row).src, 302);
    await guard(c, row, "stored");
    return serveUploadFile(c, row, "stored", c.req.param("name"));
  })
  .all("/f/:id/:name", methodNotAllowed("GET"))
  // thumb: a WebP made from the current file; a new file gets a new thumbnail name.
  .get("/t/:id/:name", async (c) => {
    const row = await liveUpload(c);
    if (!row.thumbKey || objectName(row.thumbKey) !== c.req.param("name")) throw notFound("No such thumbnail.");
    await guard(c, row, "stored");
    const head = await c.env.FILES.head(row.thumbKey);
    if (!head) throw notFound("No such thumbnail.");
    return serveObject(c, {
      key: row.thumbKey,
      size: head.size,
      etag: head.httpEtag,
      mime: "image/webp",
      cacheControl: caching(row, "stored", c.var.now()),
      filename: c.req.param("name"),
      headers: robots(row),
    });
  })
  .all("/t/:id/:name", methodNotAllowed("GET"));
