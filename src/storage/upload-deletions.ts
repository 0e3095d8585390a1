import { and, eq, type SQL } from "drizzle-orm";
import { live } from "../model/policy";
import { uploads, type UploadRow } from "../model/schema";
import type { Database } from "./db";
import { releaseUploads } from "./usage";

/*
 * D1 deletions of uploads (the rest of their queries in uploads.ts): each gives its account its
 * bytes back in the same transaction, and answers with the rows deleted so their files can go too.
 */

/**
 * The statements that delete the live upload `which` picks (by its id) and give its account its
 * bytes back: run as one batch, one transaction.
 */
function deletion(db: Database, which: SQL, now: number) {
  const picked = and(which, live.where(now))!;
  return [releaseUploads(db, picked), db.delete(uploads).where(picked).returning()] as const;
}

/** Deletes the live upload `id` if `owner` holds, returning what it was so its files can be removed. */
async function deleteLiveUpload(db: Database, id: string, owner: SQL, now: number) {
  const [, [row]] = await db.batch(deletion(db, and(eq(uploads.id, id), owner)!, now));
  return row;
}

export const deleteOwnedUpload = (db: Database, accountId: string, id: string, now: number) =>
  deleteLiveUpload(db, id, eq(uploads.accountId, accountId), now);

export const deleteUploadByToken = (db: Database, id: string, tokenHash: string, now: number) =>
  deleteLiveUpload(db, id, eq(uploads.deleteTokenHash, tokenHash), now);

/**
 * Deletes those of `ids` that are live uploads of the account, each by the statements that
 * delete one (deletion), all in one batch: one round trip, and every statement finds its upload
 * by its primary key. (One statement for all of them, `id IN (...)`, is planned on the account's
 * index and reads every upload of the account.) Returns the rows deleted.
 */
export async function deleteOwnedUploads(db: Database, accountId: string, ids: readonly string[], now: number) {
  const statements = ids.flatMap((id) => deletion(db, and(eq(uploads.id, id), eq(uploads.accountId, accountId))!, now));
  const [first, ...rest] = statements;
  if (!first) return [];
  const results = await db.batch([first, ...rest]);
  return results.filter((_, i) => i % 2 === 1).flat() as UploadRow[];
}

/**
 * Deletes every upload of these bytes, on any account, and returns them so their files can go too;
 * their accounts get their bytes back in the same transaction.
 */
export async function deleteUploadsWithContent(db: Database, contentHash: string) {
  const which = eq(uploads.contentHash, contentHash);
  const [, removed] = await db.batch([releaseUploads(db, which), db.delete(uploads).where(which).returning()]);
  return removed;
}
