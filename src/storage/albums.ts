import { and, count, desc, eq, sql } from "drizzle-orm";
import { live } from "../model/policy";
import { albums, uploads, type AlbumRow, type UploadRow } from "../model/schema";
import type { Database } from "./db";
import { newestAfter, skipped, type NewestKey, type PageStart } from "./keyset";
import type { Outbox } from "./stores";
import { albumEvents, batchWithEvents } from "./webhook-outbox";

/**
 * D1 queries of albums (`albums`; the uploads in them, `album_uploads`, in album-uploads.ts). An album's
 * uploads are read in their order (`position`, then when they were added); only live uploads
 * (not expired) are ever read through an album, and a deleted upload leaves every album with its
 * row (the foreign key's cascade), as a deleted album leaves its places.
 */

export type NewAlbumRow = typeof albums.$inferInsert;
export type AlbumPatch = Partial<
  Pick<AlbumRow, "title" | "description" | "visibility" | "passwordHash" | "coverUploadId" | "acceptsUploads">
>;

/** What an album's card shows of its cover upload. */
export type AlbumCover = Pick<
  UploadRow,
  "id" | "type" | "objectKey" | "thumbKey" | "width" | "height" | "visibility" | "passwordHash" | "maxViews" | "views"
>;

/** An album with what presenting it needs: its live uploads' count and its cover upload, if live. */
export interface AlbumWithFacts {
  album: AlbumRow;
  uploadCount: number;
  cover: AlbumCover | null;
}

/** A page of a listing: at most `limit` rows from `start`. */
export type PageOf<K = NewestKey> = { limit: number } & PageStart<K>;

/** How many of the album's uploads are live, as a column of a query on `albums`. */
const liveUploadCount = (now: number) =>
  sql<number>`(select count(*) from album_uploads au join uploads u on u.id = au.upload_id
    where au.album_id = ${albums.id} and (u.expires_at is null or u.expires_at > ${now}))`.mapWith(Number);

/**
 * The cover's columns under names of their own: rows read as objects (a batch's, or a wrapper's)
 * keep one column of each name, and the album's `id`, `title`... would hide the upload's.
 */
const coverColumns = {
  coverId: sql<string | null>`${uploads.id}`.as("cover_id"),
  coverType: sql<AlbumCover["type"] | null>`${uploads.type}`.as("cover_type"),
  coverObjectKey: sql<string | null>`${uploads.objectKey}`.as("cover_object_key"),
  coverThumbKey: sql<string | null>`${uploads.thumbKey}`.as("cover_thumb_key"),
  coverWidth: sql<number | null>`${uploads.width}`.as("cover_width"),
  coverHeight: sql<number | null>`${uploads.height}`.as("cover_height"),
  coverVisibility: sql<AlbumCover["visibility"] | null>`${uploads.visibility}`.as("cover_visibility"),
  coverPasswordHash: sql<string | null>`${uploads.passwordHash}`.as("cover_password_hash"),
  coverMaxViews: sql<number | null>`${uploads.maxViews}`.as("cover_max_views"),
  coverViews: sql<number | null>`${uploads.views}`.as("cover_views"),
};

type FactsRow = { album: AlbumRow; uploadCount: number } & {
  [K in keyof typeof coverColumns]: (typeof coverColumns)[K]["_"]["type"];
};

function withFacts(row: FactsRow): AlbumWithFacts {
  const cover: AlbumCover | null =
    row.coverId === null || row.coverObjectKey === null
      ? null
      : {
          id: row.coverId,
          type: row.coverType!,
          objectKey: row.coverObjectKey,
          thumbKey: row.coverThumbKey,
          width: row.coverWidth,
          height: row.coverHeight,
          visibility: row.coverVisibility!,
          passwordHash: row.coverPasswordHash,
          maxViews: row.coverMaxViews,
          views: row.coverViews ?? 0,
        };
  return { album: row.album, uploadCount: row.uploadCount, cover };
}

/** Albums with their facts: one query, the cover joined, the count a subquery on the order index. */
const albumsWithFacts = (db: Database, now: number) =>
  db
    .select({ album: albums, uploadCount: liveUploadCount(now).as("upload_count"), ...coverColumns })
    .from(albums)
    .leftJoin(uploads, and(eq(uploads.id, albums.coverUploadId), live.where(now)));

/** Inserts the album, with its album.created event in the same batch. */
export async function insertAlbum(deps: Outbox, row: NewAlbumRow) {
  const { db } = deps;
  await batchWithEvents(deps, [
    db.insert(albums).values(row),
    albumEvents(db, "album.created", eq(albums.id, row.id), row.createdAt),
  ]);
}

/** The album `id`, whoever owns it. */
export function findAlbum(db: Database, id: string): Promise<AlbumRow | undefined> {
  return db.select().from(albums).where(eq(albums.id, id)).get();
}

/**
 * Whether `accountId` owns the album `id` and, with `acceptingUploads`, the album accepts uploads
 * (one look-up by the primary key, nothing else read).
 */
export async function ownsAlbum(db: Database, accountId: string, id: string, options: { acceptingUploads: boolean }) {
  const row = await db
    .select({ id: albums.id })
    .from(albums)
    .where(
      and(
        eq(albums.id, id),
        eq(albums.accountId, accountId),
        options.acceptingUploads ? eq(albums.acceptsUploads, true) : undefined,
      ),
    )
    .get();
  return !!row;
}

/** The album `id` with its facts, if `accountId` owns it. */
export async function findOwnedAlbum(
  db: Database,
  accountId: string,
  id: string,
  now: number,
): Promise<AlbumWithFacts | undefined> {
  const row = await albumsWithFacts(db, now)
    .where(and(eq(albums.id, id), eq(albums.accountId, accountId)))
    .get();
  return row && withFacts(row);
}

/**
 * One page of the account's albums, newest first, and how many it has (one batch; the count reads
 * an index entry per album of the account, whose albums are few beside its uploads).
 */
export async function listAlbumsOf(db: Database, accountId: string, now: number, page: PageOf) {
  const mine = eq(albums.accountId, accountId);
  const [rows, totals] = await db.batch([
    albumsWithFacts(db, now)
      .where(and(mine, newestAfter(albums.createdAt, albums.id, page)))
      .orderBy(desc(albums.createdAt), desc(albums.id))
      .limit(page.limit)
      .offset(skipped(page)),
    db.select({ total: count() }).from(albums).where(mine),
  ]);
  return { rows: rows.map(withFacts), total: totals[0]?.total ?? 0 };
}

/**
 * Public albums, newest first, with their facts (the gallery, the sitemap and the feed). A
 * password-protected one is among them: its page says what it may without the password.
 */
export async function publicAlbumsPage(db: Database, now: number, page: PageOf): Promise<AlbumWithFacts[]> {
  const rows = await albumsWithFacts(db, now)
    .where(and(eq(albums.visibility, "public"), newestAfter(albums.createdAt, albums.id, page)))
    .orderBy(desc(albums.createdAt), desc(albums.id))
    .limit(page.limit)
    .offset(skipped(page));
  return rows.map(withFacts);
}

/**
 * Changes the account's album, with its album.updated event in the same batch (on the same
 * condition, which the change leaves true), returning it as it now is (undefined: no such album
 * of the account).
 */
export async function updateAlbum(deps: Outbox, accountId: string, id: string, patch: AlbumPatch, now: number) {
  const { db } = deps;
  const owned = and(eq(albums.id, id), eq(albums.accountId, accountId))!;
  const [rows] = await batchWithEvents(deps, [
    db
      .update(albums)
      .set({ ...patch, updatedAt: now })
      .where(owned)
      .returning(),
    albumEvents(db, "album.updated", owned, now),
  ]);
  return (rows as AlbumRow[])[0];
}

/**
 * Deletes the account's album and its places (not its uploads), its album.deleted event first (the
 * album as it was) on the same condition; whether there was one.
 */
export async function deleteAlbumRow(deps: Outbox, accountId: string, id: string, now: number) {
  const { db } = deps;
  const owned = and(eq(albums.id, id), eq(albums.accountId, accountId))!;
  const [, rows] = await batchWithEvents(deps, [
    albumEvents(db, "album.deleted", owned, now),
    db.delete(albums).where(owned).returning({ id: albums.id }),
  ]);
  return (rows as unknown[]).length > 0;
}
