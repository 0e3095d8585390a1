import { and, inArray, isNotNull, sql } from "drizzle-orm";
import { albumCover } from "../model/policy";
import { albums, uploads, type UploadRow } from "../model/schema";
import type { Database } from "./db";

/**
 * What an album's page and the listings read of albums beyond src/storage/albums.ts: each album's
 * cover, as visitors may see it (policy's albumCover, with a thumbnail).
 */

/** D1 binds at most 100 values a query: albums asked about at once. */
const COVERS_AT_ONCE = 50;

/**
 * The upload standing for each album: its chosen cover when that may (in the album, albumCover, a
 * thumbnail), else its first upload in its order that may. Two queries for up to COVERS_AT_ONCE
 * albums: the ids (each a subquery on the album's order), then the rows.
 */
export async function albumCoverRows(
  db: Database,
  albumIds: readonly string[],
  now: number,
): Promise<Map<string, UploadRow>> {
  const covers = new Map<string, UploadRow>();
  for (let i = 0; i < albumIds.length; i += COVERS_AT_ONCE) {
    const ids = albumIds.slice(i, i + COVERS_AT_ONCE);
    const may = and(albumCover.where(now), isNotNull(uploads.thumbKey));
    const chosen = sql<string | null>`coalesce(
      (select au.upload_id from album_uploads au join uploads on uploads.id = au.upload_id
        where au.album_id = "albums"."id" and au.upload_id = "albums"."cover_upload_id" and ${may}),
      (select au.upload_id from album_uploads au join uploads on uploads.id = au.upload_id
        where au.album_id = "albums"."id" and ${may}
        order by au.position, au.added_at, au.upload_id limit 1))`;
    const picks = await db.select({ albumId: albums.id, uploadId: chosen }).from(albums).where(inArray(albums.id, ids));
    const uploadIds = picks.flatMap((pick) => (pick.uploadId ? [pick.uploadId] : []));
    if (!uploadIds.length) continue;
    const rows = await db.select().from(uploads).where(inArray(uploads.id, uploadIds));
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const pick of picks) {
      const row = pick.uploadId ? byId.get(pick.uploadId) : undefined;
      if (row) covers.set(pick.albumId, row);
    }
  }
  return covers;
}
