import { randomBase62 } from "../../crypto";
import { notFound, unprocessable } from "../../errors";
import type { KeyKind } from "../../model/key-kinds";
import type { AlbumRow } from "../../model/schema";
import type { Visibility } from "../../model/visibility";
import { assertAcceptableText } from "../../moderation/moderate";
import {
  addUploadsToAlbum,
  albumMembers,
  albumUploadsPage,
  ownedLiveUploadIds,
  deleteAlbumUpload,
  reorderAlbum,
  uploadInAlbum,
} from "../../storage/album-uploads";
import {
  deleteAlbumRow,
  findOwnedAlbum,
  insertAlbum,
  ownsAlbum,
  updateAlbum,
  type AlbumPatch,
  type AlbumWithFacts,
} from "../../storage/albums";
import { ID_BATCH } from "../../storage/db";
import type { Stores } from "../../storage/stores";
import { hashPassword } from "../access/passwords";
import { removeOwnedUploads } from "../remove";
import { presentThumb, type Signing } from "../present";
import { isoTimestamp } from "../../time";

/**
 * Albums: an account's named, ordered sets of its uploads. An upload may be in several albums;
 * taking it out of one, or deleting the album, leaves the upload as it is (unless the delete asks
 * for the uploads to go too). Everything here is the owner's: another account's album is a 404,
 * exactly like one that does not exist.
 */

export type Album = AlbumWithFacts;

/** The Album resource of the API: `signing` signs a locked cover's thumbnail (the owner's answer). */
export async function presentAlbum({ album, uploadCount, cover }: Album, origin: string, signing: Signing | null) {
  return {
    id: album.id,
    title: album.title,
    description: album.description,
    visibility: album.visibility,
    locked: album.passwordHash !== null,
    accepts_uploads: album.acceptsUploads,
    url: albumUrl(origin, album.id),
    cover: cover ? await presentThumb(cover, origin, signing) : null,
    cover_id: cover ? cover.id : null,
    upload_count: uploadCount,
    created_at: isoTimestamp(album.createdAt),
    updated_at: isoTimestamp(album.updatedAt),
  };
}

/** An album's page. */
export const albumUrl = (origin: string, id: string) => `${origin}/a/${id}`;

/** Album ids: 10 base62 characters, like upload ids. */
export const newAlbumId = () => randomBase62(10);

/** Uploads named in one request (to add, to order): D1 binds at most 100 values a query. */
export const MAX_ALBUM_IDS_PER_REQUEST = 100;
/** Albums a page of the account's list holds. */
export const ALBUMS_PAGE_SIZE = 50;
/** Uploads deleted with their album in one request; the album stays until the rest are gone. */
export const UPLOADS_DELETED_PER_REQUEST = 100;

/** What a create or a change of an album may set; `undefined` leaves a field as it is, `null` clears it. */
export interface AlbumFields {
  title?: string | null;
  description?: string | null;
  visibility?: Visibility;
  /** Plain: hashed here. */
  password?: string | null;
  cover?: string | null;
  /** Whether the upload-only key may name the album when uploading (assertUploadAlbum). */
  accepts_uploads?: boolean;
}

const noSuchAlbum = () => notFound("No album with that id on this account.");

export async function getOwnedAlbum(deps: Stores, accountId: string, id: string): Promise<Album> {
  const found = await findOwnedAlbum(deps.db, accountId, id, deps.now());
  if (!found) throw noSuchAlbum();
  return found;
}

/** A cover must be one of the album's live uploads. */
async function assertCover(deps: Stores, albumId: string | null, cover: string) {
  if (albumId === null || !(await uploadInAlbum(deps.db, albumId, cover, deps.now())))
    throw unprocessable("cover: must be the id of an upload in the album.");
}

/** The row's columns for `fields`, checked (moderation, cover) and the password hashed. */
async function patchOf(deps: Stores, albumId: string | null, fields: AlbumFields): Promise<AlbumPatch> {
  await assertAcceptableText(deps.db, { title: fields.title, description: fields.description });
  const patch: AlbumPatch = {};
  if (fields.title !== undefined) patch.title = fields.title;
  if (fields.description !== undefined) patch.description = fields.description;
  if (fields.visibility !== undefined) patch.visibility = fields.visibility;
  if (fields.password !== undefined) patch.passwordHash = fields.password ? await hashPassword(fields.password) : null;
  if (fields.cover !== undefined && fields.cover !== null) await assertCover(deps, albumId, fields.cover);
  if (fields.cover !== undefined) patch.coverUploadId = fields.cover;
  if (fields.accepts_uploads !== undefined) patch.acceptsUploads = fields.accepts_uploads;
  return patch;
}

/** A new, empty album of the account (a new album holds nothing, so it can have no cover yet). */
export async function createAlbum(deps: Stores, accountId: string, fields: AlbumFields): Promise<Album> {
  const patch = await patchOf(deps, null, fields);
  const now = deps.now();
  const row: AlbumRow = {
    id: newAlbumId(),
    accountId,
    title: patch.title ?? null,
    description: patch.description ?? null,
    visibility: patch.visibility ?? "unlisted",
    passwordHash: patch.passwordHash ?? null,
    acceptsUploads: patch.acceptsUploads ?? false,
    coverUploadId: null,
    createdAt: now,
    updatedAt: now,
  };
  await insertAlbum(deps, row);
  return { album: row, uploadCount: 0, cover: null };
}

export async function changeAlbum(deps: Stores, accountId: string, id: string, fields: AlbumFields): Promise<Album> {
  await getOwnedAlbum(deps, accountId, id);
  const patch = await patchOf(deps, id, fields);
  if (!(await updateAlbum(deps, accountId, id, patch, deps.now()))) throw noSuchAlbum();
  return getOwnedAlbum(deps, accountId, id);
}

/**
 * Deletes the album; its uploads stay, unless `deleteUploads`: then they are deleted first, as
 * DELETE /api/{id} deletes one (rows, then files), at most UPLOADS_DELETED_PER_REQUEST of them a
 * request, together (removeOwnedUploads: one batch of statements, a few R2 calls). The album goes
 * once none is left; until then it stays, and the caller asks again. An upload the album shares
 * with another album is deleted too (it is gone from both).
 */
export async function removeAlbum(
  deps: Stores,
  accountId: string,
  id: string,
  options: { deleteUploads: boolean },
): Promise<{ albumDeleted: boolean; uploadsDeleted: number; uploadsLeft: number }> {
  const { uploadCount } = await getOwnedAlbum(deps, accountId, id);
  let uploadsDeleted = 0;
  if (options.deleteUploads && uploadCount > 0) {
    const rows = await albumUploadsPage(deps.db, id, {
      limit: UPLOADS_DELETED_PER_REQUEST,
      offset: 0,
      now: deps.now(),
    });
    // One deleted meanwhile (by its own DELETE) is simply not counted.
    uploadsDeleted = await removeOwnedUploads(
      deps,
      accountId,
      rows.map((row) => row.upload.id),
      "album",
    );
    const left = uploadCount - rows.length;
    if (left > 0) return { albumDeleted: false, uploadsDeleted, uploadsLeft: left };
  }
  if (!(await deleteAlbumRow(deps, accountId, id, deps.now()))) throw noSuchAlbum();
  return { albumDeleted: true, uploadsDeleted, uploadsLeft: 0 };
}

/** Distinct ids in their first order, bounded; a 422 past the bound or for an empty list. */
function idList(ids: readonly string[]) {
  const distinct = [...new Set(ids)];
  if (distinct.length === 0) throw unprocessable("uploads: must name at least one upload id.");
  if (distinct.length > MAX_ALBUM_IDS_PER_REQUEST)
    throw unprocessable(`uploads: must name at most ${MAX_ALBUM_IDS_PER_REQUEST} uploads.`);
  return distinct;
}

/** Of `ids`, those `has` says no to (looked up ID_BATCH at a time). */
async function missingOf(ids: string[], has: (batch: string[]) => Promise<Set<string>>) {
  const missing: string[] = [];
  for (let i = 0; i < ids.length; i += ID_BATCH) {
    const batch = ids.slice(i, i + ID_BATCH);
    const found = await has(batch);
    missing.push(...batch.filter((id) => !found.has(id)));
  }
  return missing;
}

const named = (ids: string[]) => ids.slice(0, 5).join(", ") + (ids.length > 5 ? ` and ${ids.length - 5} more` : "");

/**
 * Appends the account's uploads to its album, in the order given (already there: kept where they
 * are). Any id that is not a live upload of the account is a 422 naming it, and nothing is added.
 */
export async function addToAlbum(deps: Stores, accountId: string, id: string, uploadIds: readonly string[]) {
  const ids = idList(uploadIds);
  await getOwnedAlbum(deps, accountId, id);
  const now = deps.now();
  const missing = await missingOf(ids, (batch) => ownedLiveUploadIds(deps.db, accountId, batch, now));
  if (missing.length > 0) throw unprocessable(`uploads: no upload on this account with the id ${named(missing)}.`);
  await addUploadsToAlbum(deps, id, ids, now);
  return getOwnedAlbum(deps, accountId, id);
}

/** Who uploads: the account, and the kind of key it sent. */
export interface Uploader {
  accountId: string;
  kind: KeyKind;
}

/**
 * The upload-only key is public by design (a ShareX config, a page's script): it may put uploads
 * only into albums whose owner said they accept them, and it never moves an existing upload.
 */
const acceptingOnly = (uploader: Uploader) => ({ acceptingUploads: uploader.kind !== "full" });

/**
 * Adds the upload a way in made to the album it named. A duplicate's existing upload goes in only
 * with the full key: the upload-only key cannot read uploads, so the bytes of an unlisted one must
 * not move it into a public album. With the upload-only key the album must still accept uploads
 * (it may have stopped since the check); otherwise the upload stays in no album, as when the album
 * is deleted meanwhile.
 */
export async function addNewUpload(
  deps: Stores,
  uploader: Uploader,
  albumId: string,
  upload: { id: string; duplicate: boolean },
) {
  if (upload.duplicate && uploader.kind !== "full") return;
  await addUploadsToAlbum(deps, albumId, [upload.id], deps.now(), acceptingOnly(uploader));
}

/**
 * Checks, before any byte is stored, that the album a way in names is the account's and, for the
 * upload-only key, accepts uploads: a 422 if not, word for word the same either way, so that the
 * upload-only key learns nothing of which album ids exist.
 */
export async function assertUploadAlbum(deps: Stores, uploader: Uploader, albumId: string) {
  if (!(await ownsAlbum(deps.db, uploader.accountId, albumId, acceptingOnly(uploader))))
    throw unprocessable("album: no album with that id on this account.");
}

/** Takes the upload out of the album (the upload stays). A 404 if it was not in it. */
export async function takeFromAlbum(deps: Stores, accountId: string, id: string, uploadId: string) {
  await getOwnedAlbum(deps, accountId, id);
  if (!(await deleteAlbumUpload(deps, id, uploadId, deps.now())))
    throw notFound("No upload with that id in this album.");
  return getOwnedAlbum(deps, accountId, id);
}

/**
 * Puts the listed uploads first in the album, in that order; the others follow as they were.
 * Every id must be in the album (a 422 naming the others); a repeated id is a 422.
 */
export async function orderAlbum(deps: Stores, accountId: string, id: string, uploadIds: readonly string[]) {
  if (new Set(uploadIds).size !== uploadIds.length) throw unprocessable("uploads: an id is listed twice.");
  const ids = idList(uploadIds);
  await getOwnedAlbum(deps, accountId, id);
  const missing = await missingOf(ids, (batch) => albumMembers(deps.db, id, batch));
  if (missing.length > 0) throw unprocessable(`uploads: not in this album: ${named(missing)}.`);
  await reorderAlbum(deps, id, ids, deps.now());
  return getOwnedAlbum(deps, accountId, id);
}
