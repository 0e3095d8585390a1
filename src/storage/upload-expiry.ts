import { and, eq, isNotNull, isNull, lt } from "drizzle-orm";
import { expired } from "../model/policy";
import { uploads } from "../model/schema";
import type { Database } from "./db";
import type { Outbox } from "./stores";
import { releaseUploads } from "./usage";
import { batchWithEvents, uploadEvents } from "./webhook-outbox";

/*
 * D1 queries of expiry's sweep (src/uploads/cleanup/expired-uploads.ts): expired uploads' rows
 * stay, marked once their files are removed, until they are forgotten.
 */

/** Expired uploads whose files are still stored. */
export function expiredWithFiles(db: Database, now: number, limit: number) {
  return db
    .select()
    .from(uploads)
    .where(and(expired.where(now), isNull(uploads.filesRemovedAt)))
    .limit(limit);
}

/**
 * Marks the expired upload's files removed; its account gets their bytes back, and its
 * upload.expired event is written (the upload as it expired), in the same transaction, on the
 * same condition: a second sweep of it changes nothing and writes no second event.
 */
export async function markFilesRemoved(deps: Outbox, id: string, now: number) {
  const { db } = deps;
  const which = and(eq(uploads.id, id), isNull(uploads.filesRemovedAt))!;
  await batchWithEvents(deps, [
    uploadEvents(db, "upload.expired", which, now),
    releaseUploads(db, which),
    db.update(uploads).set({ filesRemovedAt: now }).where(which),
  ]);
}

/** Rows of uploads expired long enough ago that their page may say 404 instead of 410. */
export async function purgeExpiredRows(db: Database, expiredBefore: number) {
  await db.delete(uploads).where(and(lt(uploads.expiresAt, expiredBefore), isNotNull(uploads.filesRemovedAt)));
}
