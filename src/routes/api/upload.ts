import type { Context } from "hono";
import { MAX_REQUEST_BYTES, MAX_TEXT_BODY_BYTES, MiB } from "../../config";
import type { AppEnv } from "../../env";
import { tooLarge, unprocessable } from "../../errors";
import { assertMayUpload } from "../../http/auth";
import { readFields } from "../../http/body";
import { multipartBoundary } from "../../http/multipart";
import { multipartParts, TextFields } from "../../http/multipart-parts";
import { linkSigning, publicOrigin } from "../../http/request-info";
import { parseOrThrow } from "../../http/validation";
import { createUpload, newUploadId, type UploadOptions } from "../../uploads/create";
import type { UploadDeps } from "../../uploads/deps";
import { ingestFile, type IngestedFile } from "../../uploads/ingest";
import { presentUpload, presentUploadResult } from "../../uploads/present";
import { assertReplaceable, replaceFile } from "../../uploads/replace";
import { hashPassword } from "../../uploads/locks";
import { getOwnedUpload } from "../../uploads/read";
import { runMediaJob } from "../../uploads/process";
import { linkDeps, processDeps } from "../../deps";
import { settingsOf } from "../../settings";
import { fileFromLink, fileFromPieces } from "../../uploads/sources";
import { assertAcceptableText } from "../../moderation/moderate";
import { uploadFields } from "./schemas";
import { uploadItemResponse, uploadResponse } from "./responses";

const FILE_FIELDS = new Set(["uploads", "uploads[]"]);
const TOO_LARGE = `Request over ${MAX_REQUEST_BYTES / MiB}MB. Send the file in pieces to /api/chunk, or give a link in url (up to 200MB).`;

interface ReceivedBody {
  fields: Record<string, string>;
  file: IngestedFile | null;
}

/**
 * Reads a multipart upload as it streams in: text fields are collected, the file part is
 * piped to storage. Fields may come before or after the file.
 */
async function receiveMultipart(c: Context<AppEnv>, boundary: string, uploadId: string): Promise<ReceivedBody> {
  const fields = new TextFields(MAX_TEXT_BODY_BYTES);
  let file: IngestedFile | null = null;
  let fileParts = 0;
  try {
    const parts = multipartParts(c.req.raw.body!, boundary, { maxBytes: MAX_REQUEST_BYTES, tooLargeMessage: TOO_LARGE });
    for await (const part of parts) {
      if (FILE_FIELDS.has(part.name)) {
        if (++fileParts > 1) throw unprocessable("One file per request: send a single `uploads` part.");
        file = await ingestFile(c.env.FILES, uploadId, part.body);
      } else if (part.filename === null) {
        await fields.read(part);
      }
    }
  } catch (error) {
    if (file) await c.env.FILES.delete(file.key);
    throw error;
  }
  return { fields: fields.values, file };
}

/**
 * JSON fields as the text a form would carry. An array or object has no such text (turning a
 * deeply nested one into a string would even exhaust the stack): it is refused.
 */
function formFields(raw: Record<string, unknown>): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (value === null || value === undefined) continue;
    if (typeof value === "object") throw unprocessable(`${key}: must be a string, number or boolean.`);
    fields[key] = String(value);
  }
  return fields;
}

async function receive(c: Context<AppEnv>, uploadId: string): Promise<ReceivedBody> {
  const declared = Number(c.req.header("content-length") ?? "0");
  if (declared > MAX_REQUEST_BYTES) throw tooLarge(TOO_LARGE);
  const boundary = multipartBoundary(c.req.header("content-type"));
  if (boundary && c.req.raw.body) return receiveMultipart(c, boundary, uploadId);
  if ((c.req.header("content-type") ?? "").toLowerCase().startsWith("multipart/")) {
    throw unprocessable("multipart/form-data body without a boundary.");
  }
  // Without a file, the fields (url or upload_id and options) may also come as a form or JSON.
  return { fields: formFields(await readFields(c)), file: null };
}

function uploadOptions(fields: Record<string, string>) {
  // An empty optional field means "not given", except title and description, where it means "none".
  const given = Object.fromEntries(
    Object.entries(fields).filter(([k, v]) => v.trim() !== "" || k === "title" || k === "description"),
  );
  return parseOrThrow(uploadFields, given);
}

type Source = "uploads" | "url" | "upload_id";
type UploadFields = ReturnType<typeof uploadOptions>;

function selectSource(file: IngestedFile | null, options: UploadFields): Source {
  const sources: Source[] = [];
  if (file) sources.push("uploads");
  if (options.url?.trim()) sources.push("url");
  if (options.upload_id?.trim()) sources.push("upload_id");
  if (sources.length === 0) {
    throw unprocessable("No file or link: send the file as `uploads`, a link as `url`, or a chunked upload's `upload_id`.");
  }
  if (sources.length > 1) throw unprocessable(`Send exactly one of uploads, url or upload_id (got ${sources.join(", ")}).`);
  return sources[0]!;
}

/** The file of the request, whichever its source; `settle` ends a chunk session's part in it. */
async function fileFrom(c: Context<AppEnv>, deps: UploadDeps, id: string, sent: IngestedFile | null, options: UploadFields) {
  const source = selectSource(sent, options);
  if (source === "uploads") return { file: sent!, settle: async (_created: boolean) => {} };
  if (source === "url") return { file: await fileFromLink(deps, linkDeps(c.env), id, options.url!), settle: async (_created: boolean) => {} };
  const { file, session } = await fileFromPieces(deps, c.var.caller.accountId, id, options.upload_id!.trim());
  return { file, settle: (created: boolean) => (created ? session.consume() : session.release()) };
}

/**
 * Receives the request's file (whichever its source) and hands it to `use`. If anything fails
 * before `use` has made the upload, the stored file is removed and a chunk session given back;
 * once it has, the session is spent.
 */
async function withFile<T>(
  c: Context<AppEnv>,
  deps: UploadDeps,
  id: string,
  use: (file: IngestedFile, options: UploadFields) => Promise<T>,
): Promise<T> {
  const { fields, file: sent } = await receive(c, id);
  let received: Awaited<ReturnType<typeof fileFrom>> | null = null;
  let result: T;
  try {
    const options = uploadOptions(fields);
    received = await fileFrom(c, deps, id, sent, options);
    result = await use(received.file, options);
  } catch (error) {
    const file = received?.file ?? sent;
    if (file) await c.env.FILES.delete(file.key);
    await received?.settle(false);
    throw error;
  }
  // The upload is made, whatever happens to the session's bookkeeping; the cron job sweeps leftover pieces.
  await received.settle(true).catch((error) => console.error(JSON.stringify({ upload: id, settle: String(error) })));
  return result;
}

/** Conversion starts now, after the response; the cron job re-drives it if this run fails. */
const startMediaJob = (c: Context<AppEnv>, deps: UploadDeps, jobId: string | null) => {
  if (jobId) c.executionCtx.waitUntil(runMediaJob(processDeps(c.env, deps.db, deps.now), jobId));
};

export async function handleUpload(c: Context<AppEnv>, deps: UploadDeps) {
  await assertMayUpload(c);
  const id = newUploadId();
  const result = await withFile(c, deps, id, async (file, options) => {
    const maxExpiry = settingsOf(c.env).expiresInMax;
    if (options.expires_in !== undefined && options.expires_in > maxExpiry) throw unprocessable(`expires_in: must be at most ${maxExpiry}`);
    await assertAcceptableText(deps.db, { title: options.title, description: options.description });
    const settings: UploadOptions = {
      expiresIn: options.expires_in ?? null,
      allowDuplicate: options.allow_duplicate ?? false,
      keepOriginal: options.keep_original ?? false,
      visibility: options.visibility ?? "unlisted",
      title: options.title ?? null,
      description: options.description ?? null,
      passwordHash: options.password ? await hashPassword(options.password) : null,
      maxViews: options.max_views ?? null,
    };
    return createUpload(deps, { id, accountId: c.var.caller.accountId, file, options: settings });
  });
  if (!result.duplicate) startMediaJob(c, deps, result.jobId);
  // A duplicate is an existing upload, which the upload-only key (public by design) may not open:
  // its links come unsigned, so a locked one's path and thumb stay refused.
  const signing = result.duplicate && c.var.caller.kind !== "full" ? null : linkSigning(c);
  return uploadResponse(c, await presentUploadResult(result.row, publicOrigin(c), signing, result));
}

/**
 * POST /api/{id}/replace: a new file for an existing upload, from `uploads` or `upload_id` (or
 * `url`), with optional keep_original. Answers with the updated upload (as GET does).
 */
export async function handleReplace(c: Context<AppEnv>, deps: UploadDeps) {
  await assertMayUpload(c);
  const id = c.req.param("id")!;
  // A 404 or 409 before reading what may be a 100 MB body.
  assertReplaceable(await getOwnedUpload(deps, c.var.caller.accountId, id));
  const result = await withFile(c, deps, id, (file, options) =>
    replaceFile(deps, { accountId: c.var.caller.accountId, id, file, keepOriginal: options.keep_original ?? false }),
  );
  startMediaJob(c, deps, result.jobId);
  return uploadItemResponse(c, await presentUpload(result.row, publicOrigin(c), linkSigning(c)));
}
