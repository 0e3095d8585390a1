import { and, asc, count, eq, inArray, sql, type SQL } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { live } from "../model/policy";
import { albums, albumUploads, uploads } from "../model/schema";
import type { PageOf } from "./albums";
import type { Database } from "./db";
import { skipped } from "./keyset";
import type { Outbox } from "./stores";
import { albumEvents, batchWithEvents, changedJustBefore } from "./webhook-outbox";

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
 * The album's album.updated event follows in the same batch (addedEvent). Returns how many were
 * added.
 */
export async function addUploadsToAlbum(
  deps: Outbox,
  albumId: string,
  uploadIds: readonly string[],
  now: number,
  options: { acceptingUploads: boolean } = { acceptingUploads: false },
) {
  if (uploadIds.length === 0) return 0;
  const { db } = deps;
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
  const results = await batchWithEvents(deps, [...statements, addedEvent(db, albumId, uploadIds, now)]);
  return results.slice(0, -1).reduce((sum: number, rows) => sum + (rows as unknown[]).length, 0);
}

/**
 * The album.updated event of an addition, after its inserts: written when one of the uploads named
 * is in the album since `now`, which is what the inserts did (the ids bound as one JSON value: D1
 * binds at most 100 values a statement). Only an earlier addition of the same upload to the same
 * album in the same millisecond could be taken for this one.
 */
const addedEvent = (db: Outbox["db"], albumId: string, uploadIds: readonly string[], now: number) =>
  albumEvents(
    db,
    "album.updated",
    and(
      eq(albums.id, albumId),
      sql`EXISTS (SELECT 1 FROM album_uploads WHERE album_uploads.album_id = ${albums.id}
        AND album_uploads.added_at = ${now}
        AND album_uploads.upload_id IN (SELECT value FROM json_each(${JSON.stringify(uploadIds)})))`,
    )!,
    now,
  );

/**
 * Takes the upload out of the album (it stays, as do its other albums); if it was the album's
 * cover, the album has none (a cover is always in its album, so clearing it first is the same).
 * The album.updated event follows the delete, written only if it took a place out. Whether it was
 * in the album.
 */
export async function deleteAlbumUpload(deps: Outbox, albumId: string, uploadId: string, now: number) {
  const { db } = deps;
  const [, removed] = await batchWithEvents(deps, [
    db
      .update(albums)
      .set({ coverUploadId: null, updatedAt: now })
      .where(and(eq(albums.id, albumId), eq(albums.coverUploadId, uploadId))),
    db
      .delete(albumUploads)
      .where(and(eq(albumUploads.albumId, albumId), eq(albumUploads.uploadId, uploadId)))
      .returning({ id: albumUploads.uploadId }),
    albumEvents(db, "album.updated", and(eq(albums.id, albumId), changedJustBefore)!, now),
  ]);
  return (removed as unknown[]).length > 0;
}

/**
 * Puts the uploads listed first, in that order; the album's others follow in the order they had.
 * One batch: every place moves back by the count, then the listed ones take 0, 1, 2..., then the
 * album's album.updated event.
 */
export async function reorderAlbum(deps: Outbox, albumId: string, uploadIds: readonly string[], now: number) {
  if (uploadIds.length === 0) return;
  const { db } = deps;
  const n = uploadIds.length;
  await batchWithEvents(deps, [
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
    albumEvents(db, "album.updated", eq(albums.id, albumId), now),
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
  page: PageOf<AlbumOrderKey> & { now: number; only?: SQL },
) {
  const after =
    "after" in page
      ? sql`(${albumUploads.position}, ${albumUploads.addedAt}, ${albumUploads.uploadId})
        > (${page.after[0]}, ${page.after[1]}, ${page.after[2]})`
      : undefined;
  return db
    .select({ upload: uploads, position: albumUploads.position, addedAt: albumUploads.addedAt })
    .from(albumUploads)
    .innerJoin(uploads, eq(uploads.id, albumUploads.uploadId))
    .where(and(inAlbum(albumId, page.now, page.only), after))
    .orderBy(asc(albumUploads.position), asc(albumUploads.addedAt), asc(albumUploads.uploadId))
    .limit(page.limit)
    .offset(skipped(page));
}

/** An upload's place in its album's order: position, when added, its id (the order's ties). */
export type AlbumOrderKey = readonly [position: number, addedAt: number, uploadId: string];

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
