import { and, asc, count, eq, inArray, sql, type SQL } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { live } from "../model/policy";
import { albums, albumUploads, uploads, type UploadRow } from "../model/schema";
import type { PageOf } from "./albums";
import type { Database } from "./db";

/**
 * D1 queries of the uploads in albums (`album_uploads`, the albums themselves in albums.ts): added,
 * taken out, ordered, and read in the album's order.
 */

/**
 * Appends the uploads to the album, in the order given, after its last one; an upload already in
 * it keeps its place. Only uploads of the album's own account go in: each statement checks both
 * rows exist (so one deleted meanwhile is skipped rather than breaking a foreign key). One batch,
 * one transaction: the places follow each other even when another addition runs at the same time.
 * With `acceptingUploads`, only while the album accepts uploads (checked in the same statement).
 * Returns how many were added.
 */
export async function addUploadsToAlbum(
  db: Database,
  albumId: string,
  uploadIds: readonly string[],
  now: number,
  options: { acceptingUploads: boolean } = { acceptingUploads: false },
) {
  if (uploadIds.length === 0) return 0;
  const album = alias(albums, "a");
  const upload = alias(uploads, "u");
  const statements = uploadIds.map((uploadId) =>
    db
      .insert(albumUploads)
      .select(
        db
          .select({
            albumId: album.id,
            uploadId: upload.id,
            position: sql<number>`(select coalesce(max(position), -1) + 1 from album_uploads
              where album_uploads.album_id = ${album.id})`.as("position"),
            addedAt: sql<number>`${now}`.as("added_at"),
          })
          .from(album)
          .innerJoin(upload, eq(upload.accountId, album.accountId))
          .where(
            and(
              eq(album.id, albumId),
              eq(upload.id, uploadId),
              options.acceptingUploads ? eq(album.acceptsUploads, true) : undefined,
            ),
          ),
      )
      .onConflictDoNothing()
      .returning({ id: albumUploads.uploadId }),
  );
  const [first, ...rest] = statements;
  const results = await db.batch([first!, ...rest]);
  return results.reduce((sum, rows) => sum + rows.length, 0);
}

/**
 * Takes the upload out of the album (it stays, as do its other albums); if it was the album's
 * cover, the album has none. Whether it was in the album.
 */
export async function deleteAlbumUpload(db: Database, albumId: string, uploadId: string, now: number) {
  const [removed] = await db.batch([
    db
      .delete(albumUploads)
      .where(and(eq(albumUploads.albumId, albumId), eq(albumUploads.uploadId, uploadId)))
      .returning({ id: albumUploads.uploadId }),
    db
      .update(albums)
      .set({ coverUploadId: null, updatedAt: now })
      .where(and(eq(albums.id, albumId), eq(albums.coverUploadId, uploadId))),
  ]);
  return removed.length > 0;
}

/**
 * Puts the uploads listed first, in that order; the album's others follow in the order they had.
 * One batch: every place moves back by the count, then the listed ones take 0, 1, 2...
 */
export async function reorderAlbum(db: Database, albumId: string, uploadIds: readonly string[]) {
  if (uploadIds.length === 0) return;
  const n = uploadIds.length;
  await db.batch([
    db
      .update(albumUploads)
      .set({ position: sql`${albumUploads.position} + ${n}` })
      .where(eq(albumUploads.albumId, albumId)),
    ...uploadIds.map((uploadId, position) =>
      db
        .update(albumUploads)
        .set({ position })
        .where(and(eq(albumUploads.albumId, albumId), eq(albumUploads.uploadId, uploadId))),
    ),
  ]);
}

/** Which of `uploadIds` (at most ID_BATCH) are in the album. */
export async function albumMembers(db: Database, albumId: string, uploadIds: readonly string[]) {
  const rows = await db
    .select({ id: albumUploads.uploadId })
    .from(albumUploads)
    .where(and(eq(albumUploads.albumId, albumId), inArray(albumUploads.uploadId, [...uploadIds])));
  return new Set(rows.map((row) => row.id));
}

const inAlbum = (albumId: string, now: number, only?: SQL) =>
  and(eq(albumUploads.albumId, albumId), live.where(now), only);

/**
 * One page of the album's live uploads, in the album's order. `only` narrows them further (a
 * condition on `uploads`, such as `listed.where(now)` for what visitors may see).
 */
export async function albumUploadsPage(
  db: Database,
  albumId: string,
  page: PageOf & { now: number; only?: SQL },
): Promise<UploadRow[]> {
  const rows = await db
    .select({ upload: uploads })
    .from(albumUploads)
    .innerJoin(uploads, eq(uploads.id, albumUploads.uploadId))
    .where(inAlbum(albumId, page.now, page.only))
    .orderBy(asc(albumUploads.position), asc(albumUploads.addedAt), asc(albumUploads.uploadId))
    .limit(page.limit)
    .offset(page.offset);
  return rows.map((row) => row.upload);
}

/** How many live uploads the album holds (narrowed by `only` as in albumUploadsPage). */
export async function countAlbumUploads(db: Database, albumId: string, now: number, only?: SQL) {
  const [row] = await db
    .select({ n: count() })
    .from(albumUploads)
    .innerJoin(uploads, eq(uploads.id, albumUploads.uploadId))
    .where(inAlbum(albumId, now, only));
  return row?.n ?? 0;
}

/** Whether the upload is a live upload of the album's account and in the album. */
export async function uploadInAlbum(db: Database, albumId: string, uploadId: string, now: number) {
  const row = await db
    .select({ id: albumUploads.uploadId })
    .from(albumUploads)
    .innerJoin(uploads, eq(uploads.id, albumUploads.uploadId))
    .where(and(inAlbum(albumId, now), eq(albumUploads.uploadId, uploadId)))
    .get();
  return !!row;
}

/** Which of `uploadIds` (at most ID_BATCH) are live uploads of the account. */
export async function ownedLiveUploadIds(db: Database, accountId: string, uploadIds: readonly string[], now: number) {
  const rows = await db
    .select({ id: uploads.id })
    .from(uploads)
    .where(and(inArray(uploads.id, [...uploadIds]), eq(uploads.accountId, accountId), live.where(now)));
  return new Set(rows.map((row) => row.id));
}
