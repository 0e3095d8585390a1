import { Hono, type Context } from "hono";
import { servingDeps } from "../bindings";
import type { AppEnv } from "../env";
import { ApiError, forbidden, notFound, unauthorized } from "../errors";
import { immutableUntil, NO_STORE, REVALIDATE } from "../http/cache-control";
import { checkSignedUrl } from "../uploads/access/signed-links";
import { awaitsConversion } from "../uploads/media-jobs/webp-policy";
import { serveObject } from "../http/serve-object";
import { objectName } from "../storage/keys";
import type { UploadRow } from "../storage/schema";
import { takeView } from "../storage/uploads";
import { uploadLinks } from "../uploads/public-urls";
import { currentUpload } from "../uploads/serving/lookup";
import { factsOf, type ServingFacts, type ServingRecord } from "../uploads/serving/record";
import { publicOrigin } from "../http/request-info";
import { settingsOf } from "../settings";
import { methodNotAllowed } from "./method-not-allowed";

/**
 * A locked or view-limited upload's files are kept by no cache: a cached copy would outlive the
 * signed link's expiry or the last view. Others: src is revalidated on every use (a replaced file
 * shows at once); a stored object never changes under its name, so path and thumb are immutable.
 * Only a public upload's may sit in shared caches (a CDN, a proxy): nothing could take an
 * unlisted or private upload's out of them after a delete or a change of visibility, so the
 * browser alone keeps those. A change between public and not renames the files (change.ts), so
 * each name is only ever sent one way.
 */
function caching(facts: ServingFacts, url: "src" | "stored", now: number): string {
  if (!facts.shared) return NO_STORE;
  if (url === "src") return REVALIDATE;
  return immutableUntil(facts.expiresAt, now, facts.indexable ? "public" : "private");
}

const robots = (facts: ServingFacts): Record<string, string> => (facts.indexable ? {} : { "X-Robots-Tag": "noindex" });

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

type BeforeBody = ReturnType<typeof countingViews>;

/** The upload's current file, as `src` or under its stored name (`path`); null if it is not stored. */
const serveUploadFile = (c: Context<AppEnv>, facts: ServingFacts, url: "src" | "stored", filename: string, beforeBody?: BeforeBody) =>
  serveObject(c, {
    key: facts.objectKey,
    stored: { size: facts.size, etag: facts.etag },
    mime: facts.mime,
    cacheControl: caching(facts, url, c.var.now()),
    filename,
    headers: robots(facts),
    beforeBody,
  });

const serveSrc = (c: Context<AppEnv>, facts: ServingFacts, beforeBody?: BeforeBody) =>
  serveUploadFile(c, facts, "src", `${facts.id}.${objectName(facts.objectKey).split(".").pop()}`, beforeBody);

/** The thumbnail, whose size and ETag storage tells. */
const serveThumb = (c: Context<AppEnv>, facts: ServingFacts, name: string) =>
  serveObject(c, {
    key: facts.thumbKey!,
    mime: "image/webp",
    cacheControl: caching(facts, "stored", c.var.now()),
    filename: name,
    headers: robots(facts),
  });

/** A record of the upload held by this isolate or colo, if any (see src/uploads/serving). */
const recall = (c: Context<AppEnv>) => servingDeps(c).records.recall(c.req.param("id")!, c.var.now());

/**
 * The answer from the database's row, after a record was missing, out of date or did not fit
 * the URL. A file gone between reading the row and reading the file was replaced or moved
 * meanwhile, so the row is read once more; the answer is all old or all new, never a mix.
 */
async function fromDatabase(c: Context<AppEnv>, recalled: ServingRecord | null, serve: (row: UploadRow) => Promise<Response | null>) {
  for (let attempt = 1; attempt <= 2; attempt++) {
    const row = await currentUpload(servingDeps(c), c.req.param("id")!, recalled !== null || attempt > 1);
    if (!row) throw notFound("No such upload.");
    const response = await serve(row);
    if (response) return response;
  }
  throw notFound("File not found.");
}

/**
 * Public file URLs. A record of a plainly served upload answers without the database when its
 * file is still stored; every change that would make a record wrong moves or removes that file
 * first. Anything else (no record, a missing file, a locked, view-limited or converting upload)
 * is decided on the database row, so a deleted or expired upload stops being served at once.
 */
export const files = new Hono<AppEnv>()
  // src: the current file, revalidated on every use so a replaced file shows at once.
  .get("/i/:id", async (c) => {
    const record = await recall(c);
    const fast = record && (await serveSrc(c, record));
    if (fast) return fast;
    return fromDatabase(c, record, async (row) => {
      const guarded = await guard(c, servable(row), "src");
      return guarded ?? serveSrc(c, factsOf(row), countingViews(c, row));
    });
  })
  .all("/i/:id", methodNotAllowed("GET"))
  // path: one stored object. A name that is no longer current (the file was converted, replaced
  // or moved) redirects to src rather than breaking links that kept `path`.
  .get("/f/:id/:name", async (c) => {
    const name = c.req.param("name");
    const record = await recall(c);
    const fast = record && objectName(record.objectKey) === name && (await serveUploadFile(c, record, "stored", name));
    if (fast) return fast;
    return fromDatabase(c, record, async (row) => {
      if (objectName(servable(row).objectKey) !== name) return c.redirect(uploadLinks(publicOrigin(c), row).src, 302);
      await guard(c, row, "stored");
      return serveUploadFile(c, factsOf(row), "stored", name, countingViews(c, row));
    });
  })
  .all("/f/:id/:name", methodNotAllowed("GET"))
  // thumb: a WebP made from the current file; a new file gets a new thumbnail name.
  .get("/t/:id/:name", async (c) => {
    const name = c.req.param("name");
    const record = await recall(c);
    const fast = record?.thumbKey && objectName(record.thumbKey) === name && (await serveThumb(c, record, name));
    if (fast) return fast;
    return fromDatabase(c, record, async (row) => {
      if (!row.thumbKey || objectName(row.thumbKey) !== name) throw notFound("No such thumbnail.");
      await guard(c, row, "stored");
      return serveThumb(c, factsOf(row), name);
    });
  })
  .all("/t/:id/:name", methodNotAllowed("GET"));
