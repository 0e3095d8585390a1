import { assertMayUpload, type Caller } from "../accounts/callers";
import type { UploadRow } from "../model/schema";
import type { Settings } from "../settings";
import type { Stores } from "../storage/stores";
import { hashPassword } from "./access/passwords";
import { addNewUpload, assertUploadAlbum, type Uploader } from "./albums/albums";
import { createUpload, newUploadId, type UploadOptions } from "./create";
import { IncomingFile, type FileSource } from "./intake/incoming-file";
import type { LinkDeps } from "./intake/link-download";
import { presentUploadResult, type Signing } from "./present";
import { getOwnedUpload } from "./read";
import { assertReplaceable, replaceFile } from "./replace";
import { assertExpiryAllowed, type UploadFields } from "./schemas/requests";

/**
 * What the upload pipeline knows of the request it serves, built once by the way in it came
 * through (uploadCall, src/deps.ts): plain values, so the pipeline runs and is tested without HTTP.
 */
export interface UploadCall {
  /** Who is calling: the account, the key's kind, and whether it or its address is banned. */
  caller: Caller;
  /** What an upload reads of the Worker's configuration. */
  settings: Pick<Settings, "quotas" | "expiresInMax">;
  /** Where the upload's links point: the configured public origin, or the request's own. */
  origin: string;
  /** What a locked upload's links are signed with; they count from the stores' clock. */
  signingSecret: string;
  /** How a file is fetched from a link. */
  link: LinkDeps;
  /**
   * Starts the upload's media job once its row is committed, after the response: the work is the
   * job's runner's, and the cron job starts another if this start is lost.
   */
  startMediaJob: (jobId: string) => void;
}

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

/** The new upload's options, from its checked fields and the Worker's configuration. */
async function uploadOptionsOf(
  expiresInMax: number,
  { fields, passwordHash }: Pick<UploadRequest, "fields" | "passwordHash">,
): Promise<UploadOptions> {
  assertExpiryAllowed(fields.expires_in, expiresInMax);
  return {
    expiresIn: fields.expires_in ?? null,
    allowDuplicate: fields.allow_duplicate ?? false,
    keepOriginal: fields.keep_original ?? false,
    visibility: fields.visibility ?? "unlisted",
    title: fields.title ?? null,
    description: fields.description ?? null,
    passwordHash: fields.password ? await hashPassword(fields.password) : (passwordHash ?? null),
    maxViews: fields.max_views ?? null,
    focal: fields.focal ?? null,
  };
}

/**
 * A new upload, whichever way it came in: the caller may upload, the file is received from its
 * source, and the upload is made (or found to be a duplicate) and presented. It gets `id`
 * (planned by a way in that must find it again after a failure), or the id its pieces reserved.
 * The album rules are `uploader`'s: the caller's, or for a tus upload the key that created it.
 */
export async function uploadFrom(
  deps: Stores,
  call: UploadCall,
  read: ReadUploadRequest,
  id = newUploadId(),
  uploader: Uploader = call.caller,
): Promise<{ row: UploadRow; data: UploadResult }> {
  const { caller, settings } = call;
  assertMayUpload(caller);
  // Whatever fails before the upload keeps or drops the file removes it (and gives back a piece session).
  await using incoming = new IncomingFile(deps, { uploadId: id, newUpload: true, ...fileOwner(call) });
  const albums = albumCheck(deps, uploader);
  const request = await read((chunks) => incoming.stage(chunks), albums.before);
  const album = request.fields.album;
  if (album && !request.albumChecked) await albums.check(album);
  const file = await incoming.receive(request.source);
  const options = await uploadOptionsOf(settings.expiresInMax, request);
  const input = { id: incoming.uploadId, accountId: caller.accountId, file, options, quotas: settings.quotas };
  const result = await createUpload(deps, input);
  if (result.duplicate) {
    await incoming.drop(result.row.id);
  } else {
    await incoming.keep();
    if (result.jobId) call.startMediaJob(result.jobId);
  }
  // A duplicate's existing upload goes into the album only with the full key (addNewUpload).
  if (album) await addNewUpload(deps, uploader, album, { id: result.row.id, duplicate: result.duplicate });
  // A duplicate is an existing upload, which the upload-only key (public by design) may not open:
  // its links come unsigned, so a locked one's path and thumb stay refused.
  const signing = result.duplicate && caller.kind !== "full" ? null : signingOf(deps, call);
  return { row: result.row, data: await presentUploadResult(result.row, call.origin, signing, result) };
}

/** Whose the incoming file is, and how it is fetched from a link. */
const fileOwner = ({ caller, link }: UploadCall) => ({ accountId: caller.accountId, link });

/** Signing of a locked upload's links, counted from now. */
export const signingOf = (deps: Stores, call: UploadCall): Signing => ({ secret: call.signingSecret, now: deps.now() });

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

/** A new file for the caller's upload `id`, whichever way it came in; the upload as it now is. */
export async function replaceFrom(
  deps: Stores,
  call: UploadCall,
  id: string,
  read: ReadUploadRequest,
): Promise<UploadRow> {
  const { caller, settings } = call;
  assertMayUpload(caller);
  // A 404 or 409 before reading what may be a 100 MB body.
  assertReplaceable(await getOwnedUpload(deps, caller.accountId, id));
  await using incoming = new IncomingFile(deps, { uploadId: id, newUpload: false, ...fileOwner(call) });
  // A replaced upload keeps its albums: `album` is not read here.
  const { fields, source } = await read(
    (chunks) => incoming.stage(chunks),
    async () => {},
  );
  const file = await incoming.receive(source);
  const keepOriginal = fields.keep_original ?? false;
  const result = await replaceFile(deps, {
    accountId: caller.accountId,
    id,
    file,
    keepOriginal,
    quotas: settings.quotas,
  });
  await incoming.keep();
  if (result.jobId) call.startMediaJob(result.jobId);
  if (result.notRemoved) throw result.notRemoved;
  return result.row;
}
