import type { Context } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../env";
import { ApiError } from "../../errors";
import { bearerOrPresentedKey, identifyCallerBy, requireKey } from "../../http/auth";
import { edgeBodyLimit } from "../../http/edge-body-limit";
import { rateLimits } from "../../http/throttles/rate-limits";
import { notedWrites } from "../../http/d1-sessions";
import { methodNotAllowed } from "../../http/method-not-allowed";
import { linkSigning, publicOrigin } from "../../http/request-info";
import { routeGroup } from "../../http/route-group";
import type { TusUploadRow } from "../../model/schema";
import { requestStores, type Stores } from "../../deps";
import { assertUploadAlbum } from "../../uploads/albums/albums";
import { hashPassword } from "../../uploads/access/passwords";
import { presentUpload } from "../../uploads/present";
import { getOwnedUpload } from "../../uploads/read";
import {
  createTusUpload,
  findOwnTusUpload,
  terminateTusUpload,
  usageBesideOpenTus,
} from "../../uploads/intake/tus/lifecycle";
import { withTusWriter } from "../../uploads/intake/tus/writer-lease";
import { readUsageAnswer, assertWithinQuota } from "../../accounts/quotas";
import { settingsOf } from "../../settings";
import { envelope } from "../envelope";
import { uploadItemResponseSchema } from "../schemas";
import { assertMayUpload } from "../../accounts/callers";
import { assertExpiryAllowed, parseUploadFields } from "../../uploads/schemas/requests";
import {
  describeTusCreate,
  describeTusOverride,
  describeTusResult,
  describeTusTerminate,
  describeTusWrite,
} from "./openapi";
import {
  byteCount,
  httpDate,
  metadataFields,
  metadataToKeep,
  OFFSET_CONTENT_TYPE,
  parseMetadata,
  tusProtocol,
  uploadLength,
} from "./protocol";
import { receiveBytes } from "./receive";
import { optionsToStore, readStoredOptions } from "./stored-options";

/**
 * /api/tus: tus 1.0 resumable uploads (protocol.ts), a way in for Uppy, tus-js-client and the
 * many tools built on them. Creating one counts as an upload against the API's limits; its
 * requests after that count as pieces do, and its bytes against the daily piece bytes. Its last
 * byte finishes it through the upload pipeline, as POST /api with an upload_id would.
 */

const deps = requestStores;

/** The upload's URL, under the path the creation came to (/api/tus, or the dashboard's /app/api/tus). */
const tusUrl = (c: Context<AppEnv>, id: string) => `${publicOrigin(c)}${c.req.path.replace(/\/+$/, "")}/${id}`;

/** A finished upload's id and file, on its tus URL's answers. */
async function resultHeaders(c: Context<AppEnv>, upload: TusUploadRow) {
  if (upload.ended !== "finished" || !upload.uploadId) return;
  const row = await getOwnedUpload(deps(c), upload.accountId, upload.uploadId).catch(() => null);
  c.header("X-Upload-Id", upload.uploadId);
  if (row) c.header("X-Upload-Src", (await presentUpload(row, publicOrigin(c), null)).src);
}

function stateHeaders(c: Context<AppEnv>, upload: TusUploadRow) {
  c.header("Upload-Offset", String(upload.offset));
  if (upload.length === null) c.header("Upload-Defer-Length", "1");
  else c.header("Upload-Length", String(upload.length));
  if (!upload.ended) c.header("Upload-Expires", httpDate(upload.expiresAt));
}

/**
 * The caller's tus upload, as HEAD, GET and PATCH read it: an open one's stored options are read
 * back too, so that one that can never be finished is refused (410) before anything else.
 */
async function ownTusUpload(c: Context<AppEnv>, stores: Stores) {
  const upload = await findOwnTusUpload(stores, c.var.caller.accountId, c.req.param("id")!);
  if (upload.ended === null) await readStoredOptions(stores, upload);
  return upload;
}

/** POST /api/tus: a new upload, its options checked now, with its first bytes if the body has them. */
async function handleCreate(c: Context<AppEnv>) {
  const stores = deps(c);
  assertMayUpload(c.var.caller);
  const length = uploadLength(c);
  if (length === 0) throw new ApiError(422, "The file is empty: an upload needs at least one byte.");
  // A declared length that cannot fit, or an account with no upload left, is refused before any
  // byte is sent (each write and the finish check again).
  const stored = await readUsageAnswer(c.var.db, c.var.caller.accountId, settingsOf(c.env).quotas);
  assertWithinQuota(await usageBesideOpenTus(stores, stored, c.var.caller.accountId), length ?? 0);
  const sent = c.req.header("Upload-Metadata");
  const fields = parseUploadFields(metadataFields(parseMetadata(sent)));
  // The password is kept as its hash alone, never as sent.
  const metadata = metadataToKeep(sent);
  assertExpiryAllowed(fields.expires_in, settingsOf(c.env).expiresInMax);
  if (fields.album) await assertUploadAlbum(stores, c.var.caller, fields.album);
  const { password, ...rest } = fields;
  const options = {
    fields: rest,
    passwordHash: password ? await hashPassword(password) : null,
    creatorKind: c.var.caller.kind,
  };
  let upload = await createTusUpload(stores, {
    accountId: c.var.caller.accountId,
    length,
    metadata,
    fields: optionsToStore(options),
  });
  c.header("Location", tusUrl(c, upload.id));
  if (c.req.header("Content-Type")?.split(";")[0]?.trim() === OFFSET_CONTENT_TYPE && c.req.raw.body) {
    try {
      upload = await receiveBytes(c, stores, upload);
    } catch (error) {
      // The upload is made whatever became of its first bytes, unless the file itself was refused.
      // A refusal of the bytes sent (a checksum's, a length's) leaves the upload open; one of the file, not.
      const now = await findOwnTusUpload(stores, upload.accountId, upload.id).catch(() => null);
      if (!now) throw error;
      upload = now;
    }
  }
  stateHeaders(c, upload);
  await resultHeaders(c, upload);
  return c.body(null, 201);
}

/** HEAD: where to resume. GET: the upload made from it, once finished. */
async function handleHead(c: Context<AppEnv>) {
  const upload = await ownTusUpload(c, deps(c));
  stateHeaders(c, upload);
  // Filtered as when it is stored: an upload kept before that may still hold a password.
  const metadata = metadataToKeep(upload.metadata ?? undefined);
  if (metadata) c.header("Upload-Metadata", metadata);
  await resultHeaders(c, upload);
  return c.body(null, 200);
}

/** An unfinished upload's progress (202), which the document describes by its headers alone. */
const unfinishedResponseSchema = z.object({
  type: z.literal("success"),
  offset: z.number(),
  length: z.number().nullable(),
  expires_at: z.string(),
});

async function handleResult(c: Context<AppEnv>) {
  const upload = await ownTusUpload(c, deps(c));
  if (upload.ended !== "finished" || !upload.uploadId) {
    const progress = { offset: upload.offset, length: upload.length, expires_at: httpDate(upload.expiresAt) };
    return envelope(c, unfinishedResponseSchema, progress, 202);
  }
  const row = await getOwnedUpload(deps(c), upload.accountId, upload.uploadId);
  // An upload-only key may see what its upload answered, but not open a locked one's file.
  const signing = c.var.caller.kind === "full" ? linkSigning(c) : null;
  const data = await presentUpload(row, publicOrigin(c), signing);
  return envelope(c, uploadItemResponseSchema, { msg: "success", data });
}

async function handleWrite(c: Context<AppEnv>) {
  const stores = deps(c);
  const type = c.req.header("Content-Type")?.split(";")[0]?.trim();
  if (type !== OFFSET_CONTENT_TYPE) {
    throw new ApiError(415, `Send the bytes as Content-Type: ${OFFSET_CONTENT_TYPE}.`);
  }
  if (byteCount(c, "Upload-Offset") === undefined) throw new ApiError(400, "Send Upload-Offset: where these bytes go.");
  let upload = await ownTusUpload(c, stores);
  if (upload.ended === "finished") {
    if (byteCount(c, "Upload-Offset") !== upload.offset) {
      throw new ApiError(409, "This upload is complete.", { "Upload-Offset": String(upload.offset) });
    }
  } else {
    upload = await receiveBytes(c, stores, upload);
  }
  stateHeaders(c, upload);
  await resultHeaders(c, upload);
  return c.body(null, 204);
}

async function handleTerminate(c: Context<AppEnv>) {
  const stores = deps(c);
  const upload = await findOwnTusUpload(stores, c.var.caller.accountId, c.req.param("id")!);
  await withTusWriter(stores, upload, () => terminateTusUpload(stores, upload));
  return c.body(null, 204);
}

/** X-HTTP-Method-Override: a POST that stands for PATCH, DELETE or HEAD, for clients that can only send POST. */
function handleOverride(c: Context<AppEnv>) {
  switch (c.req.header("X-HTTP-Method-Override")?.trim().toUpperCase()) {
    case "PATCH":
      return handleWrite(c);
    case "DELETE":
      return handleTerminate(c);
    case "HEAD":
      return handleHead(c);
    default:
      throw new ApiError(405, "POST to an upload's URL needs X-HTTP-Method-Override: PATCH, DELETE or HEAD.", {
        Allow: "GET, HEAD, PATCH, DELETE, OPTIONS",
      });
  }
}

/**
 * The routes of the tus uploads; OPTIONS, the protocol's discovery, is answered with CORS's
 * (app.ts). A body over the edge's limit is refused first, as the edge would (edgeBodyLimit).
 */
export const tusCreation = routeGroup(
  edgeBodyLimit,
  tusProtocol,
  identifyCallerBy(bearerOrPresentedKey),
  rateLimits("api"),
  notedWrites,
)
  .post("/tus", describeTusCreate, requireKey("any"), handleCreate)
  .all("/tus", methodNotAllowed("POST"));

export const tusUploads = routeGroup(
  edgeBodyLimit,
  tusProtocol,
  identifyCallerBy(bearerOrPresentedKey),
  rateLimits("pieces"),
  notedWrites,
)
  // HEAD comes here too (Hono answers HEAD with GET's route): the protocol's offset, not the result.
  .get("/tus/:id", describeTusResult, requireKey("any"), (c) =>
    c.req.raw.method === "HEAD" ? handleHead(c) : handleResult(c),
  )
  .patch("/tus/:id", describeTusWrite, requireKey("any"), handleWrite)
  .delete("/tus/:id", describeTusTerminate, requireKey("any"), handleTerminate)
  .post("/tus/:id", describeTusOverride, requireKey("any"), handleOverride)
  .all("/tus/:id", methodNotAllowed("GET", "HEAD", "PATCH", "DELETE", "POST"));
