import { and, asc, eq, isNotNull, isNull } from "drizzle-orm";
import type { Database } from "./db";
import { uploads, type UploadRow } from "../model/schema";

/** An upload's placeholder columns: both null until made; placeholder '' once found impossible. */
export type PlaceholderColumns = Pick<UploadRow, "placeholder" | "color">;

/**
 * Up to `limit` uploads with a thumbnail and no placeholder yet, oldest id first, through the
 * partial index uploads_placeholder_missing (so the rows already done are never read again).
 */
export const uploadsWithoutPlaceholder = (db: Database, limit: number) =>
  db
    .select({ id: uploads.id, thumbKey: uploads.thumbKey })
    .from(uploads)
    .where(and(isNull(uploads.placeholder), isNotNull(uploads.thumbKey)))
    .orderBy(asc(uploads.id))
    .limit(limit);

/**
 * Records the placeholder made of thumbnail `thumbKey`, if the upload still has that thumbnail
 * and none yet (a replace or another reader may have got there first). Not a change of the
 * upload's: its updated_at and events stay.
 */
export const placeholderWrite = (db: Database, id: string, thumbKey: string, columns: PlaceholderColumns) =>
  db
    .update(uploads)
    .set(columns)
    .where(and(eq(uploads.id, id), eq(uploads.thumbKey, thumbKey), isNull(uploads.placeholder)));
