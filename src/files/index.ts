import { Hono, type Context } from "hono";
import { requestStores, servingDeps, variantAnswerDeps } from "../deps";
import type { AppEnv } from "../env";
import { notFound } from "../errors";
import { immutableUntil, NO_STORE, REVALIDATE } from "../http/cache-control";
import { serveObject } from "../http/serve-object";
import { publicOrigin } from "../http/request-info";
import type { UploadRow } from "../model/schema";
import { uploadLinks } from "../uploads/public-urls";
import { admitToFile, assertConverted, viewCounter, type FileUrl } from "../uploads/serving/admission";
import { isNamed, srcFilename } from "../uploads/serving/file-names";
import { fromCurrentUpload } from "../uploads/serving/lookup";
import { factsOf, type ServingFacts, type ServingRecord } from "../uploads/serving/record";
import { answerVariant, type Found } from "../uploads/variants/answer";
import { posterOptions, type VariantOptions } from "../uploads/variants/options";
import { srcOptions, type TransformRequest } from "../uploads/transforms/options";
import { answerTransform } from "../uploads/transforms/answer";
import { touchCopy } from "../uploads/transforms/usage";
import { afterResponse } from "../http/after-response";
import type { Variant } from "../uploads/variants/plan";
import { methodNotAllowed } from "../http/method-not-allowed";
import { presentedLink, robots } from "./requests";
import { hls } from "./hls";

/**
 * A locked or view-limited upload's files are kept by no cache: a cached copy would outlive the
 * signed link's expiry or the last view. Others: src is revalidated on every use (a replaced file
 * shows at once); a stored object never changes under its name, so path and thumb are immutable.
 * Only a public upload's may sit in shared caches (a CDN, a proxy): nothing could take an
 * unlisted or private upload's out of them after a delete or a change of visibility, so the
 * browser alone keeps those. A change between public and not renames the files (change.ts), so
 * each name is only ever sent one way.
 */
function caching(facts: ServingFacts, url: FileUrl, now: number): string {
  if (!facts.shared) return NO_STORE;
  if (url === "src") return REVALIDATE;
  return immutableUntil(facts.expiresAt, now, facts.indexable ? "public" : "private");
}

type BeforeBody = ReturnType<typeof viewCounter>;

/** The upload's current file, as `src` or under its stored name (`path`); null if it is not stored. */
const serveUploadFile = (
  c: Context<AppEnv>,
  facts: ServingFacts,
  url: FileUrl,
  filename: string,
  beforeBody?: BeforeBody,
  headers: Record<string, string> = {},
) =>
  serveObject(c, {
    key: facts.objectKey,
    stored: { size: facts.size, etag: facts.etag },
    mime: facts.mime,
    cacheControl: caching(facts, url, c.var.now()),
    filename,
    headers: { ...robots(facts), ...headers },
    beforeBody,
  });

const serveSrc = (c: Context<AppEnv>, facts: ServingFacts, beforeBody?: BeforeBody, headers?: Record<string, string>) =>
  serveUploadFile(c, facts, "src", srcFilename(facts), beforeBody, headers);

/** An answer another client would get in another encoding says so, for caches (Vary). */
const varies = (options: VariantOptions): Record<string, string> =>
  options.format === "auto" ? { Vary: "Accept" } : {};

/**
 * A stored variant, served like `src` (the same caching: the URL is src's, whose file can be
 * replaced), with Server-Timing saying whether this request made it; null if it is not stored.
 */
const serveVariant = (c: Context<AppEnv>, facts: ServingFacts, variant: Variant, found: Found, url: FileUrl = "src") =>
  serveObject(c, {
    key: variant.key,
    mime: variant.mime,
    cacheControl: caching(facts, url, c.var.now()),
    filename: variant.filename,
    headers: {
      ...robots(facts),
      ...(variant.negotiated ? { Vary: "Accept" } : {}),
      "Server-Timing": `variant;desc="${found.outcome}"${found.ms === undefined ? "" : `;dur=${found.ms}`}`,
    },
  });

/** `src?w=`: what answerVariant (src/uploads/variants) decides, served. */
const variantAnswer = (c: Context<AppEnv>, options: VariantOptions) =>
  answerVariant(variantAnswerDeps(c), c.req.param("id")!, options, c.req.header("Accept"), {
    original: (facts) => serveSrc(c, facts, undefined, varies(options)),
    variant: (facts, variant, found) => serveVariant(c, facts, variant, found),
  });

/**
 * `src?w=&h=&fit=...`: what answerTransform (src/uploads/transforms) decides, served. A stored
 * copy's use is recorded after the response (at most every 10 minutes per copy and isolate), for
 * the cap's choice of which copies to delete.
 */
const transformAnswer = (c: Context<AppEnv>, request: TransformRequest) => {
  const deps = variantAnswerDeps(c);
  return answerTransform(deps, c.req.param("id")!, request, new URL(c.req.url), c.req.header("Accept"), {
    original: (facts) => serveSrc(c, facts, undefined, request.format === "auto" ? { Vary: "Accept" } : {}),
    variant: async (facts, copy, found) => {
      const served = await serveVariant(c, facts, copy, found);
      const touch =
        served && found.outcome === "stored" && touchCopy(deps.making(facts.id).locks, copy.key, Date.now());
      if (touch) afterResponse(c, "touchCopy", touch);
      return served;
    },
  });
};

/**
 * `thumb?t=`: a video's poster at a time, made and kept as variants are (answerVariant), under
 * the thumbnail's URL: immutable as it is, since a new file has a new thumbnail name.
 */
const posterAnswer = (c: Context<AppEnv>, options: VariantOptions) => {
  const name = c.req.param("name")!;
  const named = (facts: ServingFacts) => {
    if (!isNamed(facts.thumbKey, name)) throw notFound("No such thumbnail.");
  };
  return answerVariant(variantAnswerDeps(c), c.req.param("id")!, options, c.req.header("Accept"), {
    original: async (facts) => {
      named(facts);
      return serveThumb(c, facts, name);
    },
    variant: async (facts, variant, found) => {
      named(facts);
      return serveVariant(c, facts, variant, found, "stored");
    },
  });
};

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

/** The answer from the database's row (see fromCurrentUpload), after `record` did not answer. */
const fromDatabase = (
  c: Context<AppEnv>,
  record: ServingRecord | null,
  serve: (row: UploadRow) => Promise<Response | null>,
) => fromCurrentUpload(servingDeps(c), c.req.param("id")!, record !== null, serve);

/**
 * Public file URLs. A record of a plainly served upload answers without the database when its
 * file is still stored; every change that would make a record wrong moves or removes that file
 * first. Anything else (no record, a missing file, a locked, view-limited or converting upload)
 * is decided on the database row, so a deleted or expired upload stops being served at once.
 */
export const files = new Hono<AppEnv>()
  // src: the current file, revalidated on every use so a replaced file shows at once.
  .get("/i/:id", async (c) => {
    const options = srcOptions(new URL(c.req.url).searchParams);
    if (options && "variant" in options) return variantAnswer(c, options.variant);
    if (options) return transformAnswer(c, options.transform);
    const record = await recall(c);
    const fast = record && (await serveSrc(c, record));
    if (fast) return fast;
    return fromDatabase(c, record, async (row) => {
      assertConverted(row);
      if ((await admitToFile(row, "src", presentedLink(c), c.var.now())) === "page") {
        c.header("Cache-Control", NO_STORE);
        return c.redirect(uploadLinks(publicOrigin(c), row).direct, 302);
      }
      return serveSrc(c, factsOf(row), viewCounter(requestStores(c), row));
    });
  })
  .all("/i/:id", methodNotAllowed("GET"))
  // path: one stored object. A name that is no longer current (the file was converted, replaced
  // or moved) redirects to src rather than breaking links that kept `path`.
  .get("/f/:id/:name", async (c) => {
    const name = c.req.param("name");
    const record = await recall(c);
    const fast = record && isNamed(record.objectKey, name) && (await serveUploadFile(c, record, "stored", name));
    if (fast) return fast;
    return fromDatabase(c, record, async (row) => {
      assertConverted(row);
      if (!isNamed(row.objectKey, name)) return c.redirect(uploadLinks(publicOrigin(c), row).src, 302);
      await admitToFile(row, "stored", presentedLink(c), c.var.now());
      return serveUploadFile(c, factsOf(row), "stored", name, viewCounter(requestStores(c), row));
    });
  })
  .all("/f/:id/:name", methodNotAllowed("GET"))
  // thumb: a WebP made from the current file; a new file gets a new thumbnail name.
  .get("/t/:id/:name", async (c) => {
    const poster = posterOptions(new URL(c.req.url).searchParams);
    if (poster) return posterAnswer(c, poster);
    const name = c.req.param("name");
    const record = await recall(c);
    const fast = record && isNamed(record.thumbKey, name) && (await serveThumb(c, record, name));
    if (fast) return fast;
    return fromDatabase(c, record, async (row) => {
      if (!isNamed(row.thumbKey, name)) throw notFound("No such thumbnail.");
      await admitToFile(row, "stored", presentedLink(c), c.var.now());
      return serveThumb(c, factsOf(row), name);
    });
  })
  .all("/t/:id/:name", methodNotAllowed("GET"))
  .route("/", hls);
