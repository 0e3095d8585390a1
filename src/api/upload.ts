import type { Context } from "hono";
import type { AppEnv } from "../env";
import { unprocessable } from "../errors";
import { afterResponse } from "../http/after-response";
import { assertMayUpload } from "../http/auth";
import { linkSigning, publicOrigin } from "../http/request-info";
import { readUploadBody } from "../http/upload-body";
import { parseOrThrow } from "../http/validation";
import { createUpload, newUploadId, type UploadOptions } from "../uploads/create";
import { IncomingFile, type FileSource, type FileTarget } from "../uploads/intake/incoming-file";
import { presentUpload, presentUploadResult } from "../uploads/present";
import { assertReplaceable, replaceFile } from "../uploads/replace";
import { hashPassword } from "../uploads/access/passwords";
import { getOwnedUpload } from "../uploads/read";
import { addNewUpload, assertUploadAlbum, type Uploader } from "../uploads/albums/albums";
import { linkDeps, type Stores } from "../deps";
import type { UploadRow } from "../model/schema";
import { workflowRunner } from "../uploads/media-jobs/runner";
import { settingsOf } from "../settings";
import { uploadFields } from "./schemas";
import { uploadItemResponse, uploadResponse } from "./responses";

/** An upload's text fields, checked; throws (422) on bad ones. */
export function parseUploadFields(fields: Record<string, string>) {
  // An empty optional field means "not given", except title and description, where it means "none".
  const given = Object.fromEntries(
    Object.entries(fields).filter(([k, v]) => v.trim() !== "" || k === "title" || k === "description"),
  );
  return parseOrThrow(uploadFields, given);
}

export type UploadFields = ReturnType<typeof parseUploadFields>;

/** What a way in has read of an upload request: its checked fields, and where its file comes from. */
export interface UploadRequest {
  fields: UploadFields;
  source: FileSource;
  /** A password given earlier and hashed then (a tus upload's options), when `fields` has none. */
  passwordHash?: string | null;
  /**
   * `fields.album` was checked when the upload began (a tus upload's creation): an album deleted
   * since leaves the upload made, in no album, rather than refusing bytes already sent.
   */
  albumChecked?: boolean;
}

/**
 * How a way in reads its request. A file sent in the request is handed to `stage` as it streams
 * in, so it is never held in memory; whatever was staged before a refusal is removed. A way in
 * that sees an `album` field before the file calls `checkAlbum` with it first, so that a wrong
 * album stores nothing (uploadFrom checks it anyway, before the file is received from a link or
 * pieces).
 */
export type ReadUploadRequest = (
  stage: IncomingFile["stage"],
  checkAlbum: (fieldsSoFar: Record<string, string>) => Promise<void>,
) => Promise<UploadRequest>;

/** The new upload (or the one it duplicates) as the upload response's `data` carries it. */
export type UploadResult = Awaited<ReturnType<typeof presentUploadResult>>;

const fileTarget = (c: Context<AppEnv>, uploadId: string, newUpload: boolean): FileTarget => ({
  uploadId,
  newUpload,
  accountId: c.var.caller.accountId,
  link: linkDeps(c.env),
});

/**
 * The API's own request: its file, if sent, is staged as it streams in, and its fields are
 * checked, which also say where the file comes from otherwise.
 */
const readApiRequest =
  (c: Context<AppEnv>): ReadUploadRequest =>
  async (stage, checkAlbum) => {
    const body = await readUploadBody(c.req.raw, stage, checkAlbum);
    const fields = parseUploadFields(body.fields);
    return { fields, source: { sent: body.file, url: fields.url, pieceSessionId: fields.upload_id } };
  };

/** An expiry the schema let through may still be over the Worker's configured ceiling: a 422. */
export function assertExpiryAllowed(c: Context<AppEnv>, expiresIn: number | null | undefined) {
  const maxExpiry = settingsOf(c.env).expiresInMax;
  if (expiresIn != null && expiresIn > maxExpiry) throw unprocessable(`expires_in: must be at most ${maxExpiry}`);
}

/** The new upload's options, from its checked fields and the Worker's configuration. */
async function uploadOptionsOf(
  c: Context<AppEnv>,
  { fields, passwordHash }: Pick<UploadRequest, "fields" | "passwordHash">,
): Promise<UploadOptions> {
  assertExpiryAllowed(c, fields.expires_in);
  return {
    expiresIn: fields.expires_in ?? null,
    allowDuplicate: fields.allow_duplicate ?? false,
    keepOriginal: fields.keep_original ?? false,
    visibility: fields.visibility ?? "unlisted",
    title: fields.title ?? null,
    description: fields.description ?? null,
    passwordHash: fields.password ? await hashPassword(fields.password) : (passwordHash ?? null),
    maxViews: fields.max_views ?? null,
  };
}

/**
 * The job's runner starts once its row is committed, right after the response: starting it takes
 * a moment, the work is the runner's (a Workflow instance), and the cron job starts another if
 * this start is lost.
 */
const startMediaJob = (c: Context<AppEnv>, jobId: string | null) => {
  if (jobId) afterResponse(c, "media job", workflowRunner(c.env.MEDIA_JOBS).start(jobId));
};

/**
 * A new upload, whichever way it came in: the caller may upload, the file is received from its
 * source, and the upload is made (or found to be a duplicate) and presented. It gets `id`
 * (planned by a way in that must find it again after a failure), or the id its pieces reserved.
 * The album rules are `uploader`'s: the caller's, or for a tus upload the key that created it.
 */
export async function uploadFrom(
  c: Context<AppEnv>,
  deps: Stores,
  read: ReadUploadRequest,
  id = newUploadId(),
  uploader: Uploader = c.var.caller,
): Promise<{ row: UploadRow; data: UploadResult }> {
  assertMayUpload(c);
  const accountId = c.var.caller.accountId;
  // Whatever fails before the upload keeps or drops the file removes it (and gives back a piece session).
  await using incoming = new IncomingFile(deps, fileTarget(c, id, true));
  const albums = albumCheck(deps, uploader);
  const request = await read((chunks) => incoming.stage(chunks), albums.before);
  const album = request.fields.album;
  if (album && !request.albumChecked) await albums.check(album);
  const file = await incoming.receive(request.source);
  const options = await uploadOptionsOf(c, request);
  const quotas = settingsOf(c.env).quotas;
  const result = await createUpload(deps, { id: incoming.uploadId, accountId, file, options, quotas });
  if (result.duplicate) {
    await incoming.drop(result.row.id);
  } else {
    await incoming.keep();
    startMediaJob(c, result.jobId);
  }
  // A duplicate's existing upload goes into the album only with the full key (addNewUpload).
  if (album) await addNewUpload(deps, uploader, album, { id: result.row.id, duplicate: result.duplicate });
  // A duplicate is an existing upload, which the upload-only key (public by design) may not open:
  // its links come unsigned, so a locked one's path and thumb stay refused.
  const signing = result.duplicate && c.var.caller.kind !== "full" ? null : linkSigning(c);
  return { row: result.row, data: await presentUploadResult(result.row, publicOrigin(c), signing, result) };
}

/**
 * The album an upload names is one the caller's key may upload into (a 422 otherwise), checked
 * once a request: `before` with the fields that came ahead of a sent file, `check` with the album
 * finally named.
 */
function albumCheck(deps: Stores, uploader: Uploader) {
  let checked: string | undefined;
  const check = async (album: string) => {
    if (album === checked) return;
    await assertUploadAlbum(deps, uploader, album);
    checked = album;
  };
  const before = async (fieldsSoFar: Record<string, string>) => {
    const album = fieldsSoFar.album?.trim();
    if (album) await check(album);
  };
  return { check, before };
}

/** POST /api. */
export async function handleUpload(c: Context<AppEnv>, deps: Stores) {
  return uploadResponse(c, (await uploadFrom(c, deps, readApiRequest(c))).data);
}

/** A new file for the caller's upload `id`, whichever way it came in; the upload as it now is. */
export async function replaceFrom(
  c: Context<AppEnv>,
  deps: Stores,
  id: string,
  read: ReadUploadRequest,
): Promise<UploadRow> {
  assertMayUpload(c);
  const accountId = c.var.caller.accountId;
  // A 404 or 409 before reading what may be a 100 MB body.
  assertReplaceable(await getOwnedUpload(deps, accountId, id));
  await using incoming = new IncomingFile(deps, fileTarget(c, id, false));
  // A replaced upload keeps its albums: `album` is not read here.
  const { fields, source } = await read(
    (chunks) => incoming.stage(chunks),
    async () => {},
  );
  const file = await incoming.receive(source);
  const keepOriginal = fields.keep_original ?? false;
  const result = await replaceFile(deps, { accountId, id, file, keepOriginal, quotas: settingsOf(c.env).quotas });
  await incoming.keep();
  startMediaJob(c, result.jobId);
  if (result.notRemoved) throw result.notRemoved;
  return result.row;
}

/**
 * POST /api/{id}/replace: a new file for an existing upload, from `uploads` or `upload_id` (or
 * `url`), with optional keep_original. Answers with the updated upload (as GET does).
 */
export async function handleReplace(c: Context<AppEnv>, deps: Stores) {
  const row = await replaceFrom(c, deps, c.req.param("id")!, readApiRequest(c));
  return uploadItemResponse(c, await presentUpload(row, publicOrigin(c), linkSigning(c)));
}
