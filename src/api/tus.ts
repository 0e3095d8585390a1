import type { Context } from "hono";
import type { AppEnv } from "../env";
import { ApiError, tooLarge } from "../errors";
import type { KeyKind } from "../model/key-kinds";
import { bearerOrPresentedKey, identifyCallerBy, requireKey } from "../http/auth";
import { edgeBodyLimit } from "../http/edge-body-limit";
import { bodyBlocks } from "../http/body-blocks";
import { withPieceBytes } from "../http/throttles/budgets";
import { rateLimits } from "../http/throttles/rate-limits";
import { notedWrites } from "../http/d1-sessions";
import { methodNotAllowed } from "../http/method-not-allowed";
import { linkSigning, publicOrigin } from "../http/request-info";
import { routeGroup } from "../http/route-group";
import { isolateMemory } from "../limits/isolate-memory";
import type { TusUploadRow } from "../model/schema";
import { requestStores, type Stores, uploadCall } from "../deps";
import { assertUploadAlbum } from "../uploads/albums/albums";
import { hashPassword } from "../uploads/access/passwords";
import { presentUpload } from "../uploads/present";
import { getOwnedUpload } from "../uploads/read";
import {
  type Checksum,
  checkedBytes,
  isChecksumMismatch,
  leaseKeeper,
  storageBusy,
  writeTusBytes,
} from "../uploads/intake/tus-bytes";
import { DrizzleQueryError } from "drizzle-orm/errors";
import {
  assertPiecesMakeTheFile,
  createTusUpload,
  declareTusLength,
  fileTooLarge,
  findOwnTusUpload,
  finishTusUpload,
  keepTusWriter,
  refuseTusUpload,
  terminateTusUpload,
  usageBesideOpenTus,
  withTusWriter,
} from "../uploads/intake/tus-uploads";
import {
  describeTusCreate,
  describeTusOverride,
  describeTusResult,
  describeTusTerminate,
  describeTusWrite,
} from "./openapi-tus";
import { uploadItemResponse } from "./responses";
import { accountUsage, assertWithinQuota, quotaRefusal, type Usage } from "../accounts/quotas";
import { MAX_FILE_BYTES } from "../model/spec-limits";
import { settingsOf } from "../settings";
import { assertMayUpload } from "../accounts/callers";
import { assertExpiryAllowed, parseUploadFields, type UploadFields } from "../uploads/schemas/requests";
import { uploadFrom } from "../uploads/way-in";
import {
  byteCount,
  httpDate,
  metadataFields,
  metadataToKeep,
  OFFSET_CONTENT_TYPE,
  parseMetadata,
  tusProtocol,
  uploadChecksum,
  uploadLength,
} from "./tus-protocol";

/**
 * /api/tus: tus 1.0 resumable uploads (tus-protocol.ts), a way in for Uppy, tus-js-client and the
 * many tools built on them. Creating one counts as an upload against the API's limits; its
 * requests after that count as pieces do, and its bytes against the daily piece bytes. Its last
 * byte finishes it through the upload pipeline, as POST /api with an upload_id would.
 */

const deps = requestStores;

/** The options a tus upload was created with, checked then, for the pipeline at its end. */
interface StoredOptions {
  fields: UploadFields;
  passwordHash: string | null;
  /**
   * The kind of key that created it: the album rules at its end are that key's, whichever key
   * sends the last bytes (for an upload created before this was kept, the sender's, as before).
   */
  creatorKind?: KeyKind;
}

const tusUrl = (c: Context<AppEnv>, id: string) => `${publicOrigin(c)}/api/tus/${id}`;

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
 * How far the file may reach, and the refusal past it: its length (the quota checked against
 * it), or while that is not known the largest file and the room the account's byte quota leaves.
 */
function capOf(upload: TusUploadRow, usage: Usage) {
  if (upload.length !== null) {
    assertWithinQuota(usage, upload.length);
    const length = upload.length;
    return { bytes: length, refusal: () => tooLarge(`This request goes past the upload's length of ${length} bytes.`) };
  }
  const room = usage.bytes_allowed === null ? MAX_FILE_BYTES : usage.bytes_allowed - usage.bytes_used;
  return {
    bytes: Math.max(0, Math.min(MAX_FILE_BYTES, room)),
    refusal: (size: number) => (size > MAX_FILE_BYTES ? fileTooLarge() : (quotaRefusal(usage, size) ?? fileTooLarge())),
  };
}

/**
 * A checksummed request's bytes, held aside until their digest matches (checkedBytes), charged
 * to the daily piece bytes before any is stored: a mismatch, or a body short of its
 * Content-Length, has sent its bytes too, and stays charged; only a failure of ours (storage's
 * 503, or the lease lost: a 423) gives them back.
 */
async function chargedCheckedBytes(
  c: Context<AppEnv>,
  stores: Stores,
  held: TusUploadRow,
  writer: string,
  body: ReadableStream<Uint8Array>,
  declared: number,
  sum: Checksum,
  keep: () => Promise<void>,
) {
  const checked = await withPieceBytes(
    c,
    declared,
    () =>
      checkedBytes(stores.bucket, held.id, writer, body, declared, sum, keep).catch((error: unknown) =>
        isChecksumMismatch(error) ? { mismatch: error } : Promise.reject(error),
      ),
    (error) => !(error instanceof ApiError) || error.status === 503 || error.status === 423,
  );
  if ("mismatch" in checked) throw checked.mismatch;
  return checked;
}

/**
 * The request's bytes, written from the upload's offset while this request holds its writer
 * lease; then, if they were the last, the upload is made. Answers the upload as it then is.
 * Admitted first as every way in is: the caller may upload, and the bytes fit the file's cap,
 * the account's quota and (as they are stored) the key's and network's daily piece bytes.
 */
async function receiveBytes(c: Context<AppEnv>, stores: Stores, upload: TusUploadRow): Promise<TusUploadRow> {
  assertMayUpload(c.var.caller);
  const sum = uploadChecksum(c);
  const declared = byteCount(c, "Content-Length");
  if (sum && declared === undefined) throw new ApiError(400, "Upload-Checksum needs a Content-Length.");
  const body = c.req.raw.body;
  const stored = await accountUsage(c.var.db, c.var.caller.accountId, settingsOf(c.env).quotas);
  const usage = await usageBesideOpenTus(stores, stored, c.var.caller.accountId, upload.id);
  return withTusWriter(stores, upload, async (held, writer) => {
    const at = byteCount(c, "Upload-Offset") ?? 0;
    if (at !== held.offset) {
      throw new ApiError(409, `Upload-Offset ${at} is not this upload's offset, ${held.offset}: resume from there.`, {
        "Upload-Offset": String(held.offset),
      });
    }
    const length = byteCount(c, "Upload-Length");
    if (length !== undefined && held.length === null) {
      assertWithinQuota(usage, length);
      held = await declareTusLength(stores, held, writer, length);
    } else if (length !== undefined && length !== held.length) {
      throw new ApiError(400, `Upload-Length cannot change: it is ${held.length}.`);
    }
    const cap = capOf(held, usage);
    // Refused before a byte is read: a declared body that goes past what the file may hold.
    if (declared !== undefined && held.offset + declared > cap.bytes) throw cap.refusal(held.offset + declared);
    const keep = leaseKeeper(stores, held, writer);
    const memory = isolateMemory.open();
    let checked: Awaited<ReturnType<typeof chargedCheckedBytes>> | null = null;
    let complete: boolean;
    try {
      if (sum && body) checked = await chargedCheckedBytes(c, stores, held, writer, body, declared!, sum, keep);
      // Even with no body: a length given last may end the file in the bytes already held.
      const written = await writeTusBytes(stores, {
        upload: held,
        writer,
        keep,
        // In blocks of 64 KiB or more: the runtime's own 4 KiB pieces cost a read each.
        body: bodyBlocks(checked?.body ?? body),
        memory,
        // A checksummed request's bytes were charged before they were read.
        charge: checked ? (_bytes, store) => store() : (bytes, store) => withPieceBytes(c, bytes, store),
        cap,
      });
      held = { ...held, offset: written.offset };
      complete = written.complete;
    } catch (error) {
      throw asStorageError(held.id, error);
    } finally {
      memory.release();
      await checked?.discard();
    }
    if (!complete) return held;
    try {
      return await finish(c, stores, held, writer);
    } catch (error) {
      throw asStorageError(held.id, error);
    }
  });
}

/**
 * A failure of storage while bytes were written or the file made (R2 or D1 refusing or failing)
 * is a 503 with Retry-After, which tus clients retry from the offset; the service's own refusals
 * pass as they are.
 */
function asStorageError(id: string, error: unknown) {
  if (error instanceof ApiError || !isStorageFailure(error)) return error;
  console.error(JSON.stringify({ tus: id, storage: String(error), stack: (error as Error)?.stack }));
  return storageBusy();
}

/**
 * An error of R2 or D1 (the binding's own, or drizzle's around D1's): anything else is the code's
 * own fault, a 500 logged as such.
 */
export function isStorageFailure(error: unknown): boolean {
  if (error instanceof DrizzleQueryError) return true;
  if (!(error instanceof Error)) return false;
  const { message } = error;
  // R2's binding ends its errors with R2's code ("put: … (10058)"); D1's start with D1_.
  return (
    /\(\d{5}\)\s*$/.test(message) ||
    /\bD1_[A-Z_]*ERROR\b|SQLITE_/.test(message) ||
    /network connection lost|internal error/i.test(message)
  );
}

/**
 * Refusals of the file itself are for good; anything else (the service busy, a limit, a failure)
 * may pass: the offset never moved past the last piece's start, so the client sends it again and
 * the finish is tried again then.
 */
const refusesTheFile = (error: unknown): error is ApiError =>
  error instanceof ApiError &&
  error.status >= 400 &&
  error.status < 500 &&
  ![408, 409, 423, 429].includes(error.status);

/** The upload's last byte is stored: it goes through the upload pipeline as any file does. */
async function finish(c: Context<AppEnv>, stores: Stores, upload: TusUploadRow, writer: string) {
  const options = JSON.parse(upload.fields) as StoredOptions;
  await assertPiecesMakeTheFile(stores, upload, writer);
  // Reading a large file may take longer than the lease.
  const stopKeeping = keepTusWriter(stores, upload.id, writer);
  try {
    const read = async () => ({
      fields: options.fields,
      passwordHash: options.passwordHash,
      albumChecked: true,
      source: { sent: null, tusUploadId: upload.id },
    });
    // The album rules are those of the key that created the upload, as checked then.
    const uploader = { accountId: upload.accountId, kind: options.creatorKind ?? c.var.caller.kind };
    const { row, data } = await uploadFrom(stores, uploadCall(c), read, upload.uploadId!, uploader);
    const finished = await finishTusUpload(stores, upload, row.id);
    // What POST /api's answer alone tells, and only this answer can: the delete link exists only now.
    if (data.delete_url) c.header("X-Upload-Delete-Url", data.delete_url);
    c.header("X-Upload-Duplicate", String(data.duplicate));
    return finished;
  } catch (error) {
    if (refusesTheFile(error)) await refuseTusUpload(stores, upload, { status: error.status, message: error.message });
    throw error;
  } finally {
    stopKeeping();
  }
}

/** POST /api/tus: a new upload, its options checked now, with its first bytes if the body has them. */
async function handleCreate(c: Context<AppEnv>) {
  const stores = deps(c);
  assertMayUpload(c.var.caller);
  const length = uploadLength(c);
  if (length === 0) throw new ApiError(422, "The file is empty: an upload needs at least one byte.");
  // A declared length that cannot fit, or an account with no upload left, is refused before any
  // byte is sent (each write and the finish check again).
  const stored = await accountUsage(c.var.db, c.var.caller.accountId, settingsOf(c.env).quotas);
  assertWithinQuota(await usageBesideOpenTus(stores, stored, c.var.caller.accountId), length ?? 0);
  const sent = c.req.header("Upload-Metadata");
  const fields = parseUploadFields(metadataFields(parseMetadata(sent)));
  // The password is kept as its hash alone, never as sent.
  const metadata = metadataToKeep(sent);
  assertExpiryAllowed(fields.expires_in, settingsOf(c.env).expiresInMax);
  if (fields.album) await assertUploadAlbum(stores, c.var.caller, fields.album);
  const { password, ...rest } = fields;
  const options: StoredOptions = {
    fields: rest,
    passwordHash: password ? await hashPassword(password) : null,
    creatorKind: c.var.caller.kind,
  };
  let upload = await createTusUpload(stores, {
    accountId: c.var.caller.accountId,
    length,
    metadata,
    fields: JSON.stringify(options),
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
  const upload = await findOwnTusUpload(deps(c), c.var.caller.accountId, c.req.param("id")!);
  stateHeaders(c, upload);
  // Filtered as when it is stored: an upload kept before that may still hold a password.
  const metadata = metadataToKeep(upload.metadata ?? undefined);
  if (metadata) c.header("Upload-Metadata", metadata);
  await resultHeaders(c, upload);
  return c.body(null, 200);
}

async function handleResult(c: Context<AppEnv>) {
  const upload = await findOwnTusUpload(deps(c), c.var.caller.accountId, c.req.param("id")!);
  if (upload.ended !== "finished" || !upload.uploadId) {
    return c.json(
      { type: "success", offset: upload.offset, length: upload.length, expires_at: httpDate(upload.expiresAt) },
      202,
    );
  }
  const row = await getOwnedUpload(deps(c), upload.accountId, upload.uploadId);
  // An upload-only key may see what its upload answered, but not open a locked one's file.
  const signing = c.var.caller.kind === "full" ? linkSigning(c) : null;
  return uploadItemResponse(c, await presentUpload(row, publicOrigin(c), signing));
}

async function handleWrite(c: Context<AppEnv>) {
  const stores = deps(c);
  const type = c.req.header("Content-Type")?.split(";")[0]?.trim();
  if (type !== OFFSET_CONTENT_TYPE) {
    throw new ApiError(415, `Send the bytes as Content-Type: ${OFFSET_CONTENT_TYPE}.`);
  }
  if (byteCount(c, "Upload-Offset") === undefined) throw new ApiError(400, "Send Upload-Offset: where these bytes go.");
  let upload = await findOwnTusUpload(stores, c.var.caller.accountId, c.req.param("id")!);
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
