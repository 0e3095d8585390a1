import { and, asc, desc, eq, getTableColumns, inArray, isNull, not, sql, type SQL } from "drizzle-orm";
import { listed, live, servedPlain, unrestricted, usedUp, viewLimited } from "../model/policy";
import type { Database } from "./db";
import { compiled, placeholdersOf, rowFromDriver } from "./compiled";
import { newestAfter, skipped, type NewestKey, type PageStart } from "./keyset";
import { accountUploadTotal } from "./listing-totals";
import { uploads, type UploadRow } from "../model/schema";
import type { Outbox } from "./stores";
import { batchWithEvents, changedJustBefore, uploadEvents } from "./webhook-outbox";

const insertUpload = compiled<UploadRow>((db, p) =>
  db.insert(uploads).values(placeholdersOf(uploads, p)).onConflictDoNothing().returning({ id: uploads.id }),
);

/**
 * Inserts the whole row, returning its id; none when the account's dedup slot for that content is
 * already taken. Written once per isolate (compiled.ts): every upload makes one.
 */
export const uploadInsert = (db: Database, row: UploadRow) => insertUpload(db, row).all<{ id: string }>();

const duplicateQuery = compiled<{ accountId: string; contentHash: string }>((db, p) =>
  db
    .select()
    .from(uploads)
    .where(
      and(eq(uploads.accountId, p("accountId")), eq(uploads.contentHash, p("contentHash")), isNull(uploads.expiresAt)),
    )
    .orderBy(asc(uploads.createdAt))
    .limit(1),
);

/**
 * The account's oldest live, non-expiring upload of exactly these bytes, as a list of at most one
 * raw row (read it with duplicateRow). Written once per isolate (compiled.ts): most uploads ask.
 */
export const duplicateOf = (db: Database, accountId: string, contentHash: string) =>
  duplicateQuery(db, { accountId, contentHash }).all();

/** The upload in duplicateOf's answer, if any. */
export const duplicateRow = (rows: Record<string, unknown>[]): UploadRow | undefined =>
  rows[0] ? rowFromDriver(uploads, rows[0]) : undefined;

export async function findDuplicate(db: Database, accountId: string, contentHash: string) {
  return duplicateRow(await duplicateOf(db, accountId, contentHash));
}

export async function findUpload(db: Database, id: string, now: number): Promise<UploadRow | undefined> {
  return db
    .select()
    .from(uploads)
    .where(and(eq(uploads.id, id), live.where(now)))
    .get();
}

/** The live upload and whether it is served plainly (servedPlain in src/model/policy.ts). */
export async function findServingUpload(db: Database, id: string, now: number) {
  const found = await db
    .select({ ...getTableColumns(uploads), plain: sql<number>`${servedPlain.where()}` })
    .from(uploads)
    .where(and(eq(uploads.id, id), live.where(now)))
    .get();
  if (!found) return undefined;
  const { plain, ...row } = found;
  return { row: row as UploadRow, plain: plain === 1 };
}

/** As findServingUpload, on one account. */
export async function findOwnedServingUpload(db: Database, accountId: string, id: string, now: number) {
  const found = await findServingUpload(db, id, now);
  return found?.row.accountId === accountId ? found : undefined;
}

export async function findOwnedUpload(db: Database, accountId: string, id: string, now: number) {
  return db
    .select()
    .from(uploads)
    .where(and(eq(uploads.id, id), eq(uploads.accountId, accountId), live.where(now)))
    .get();
}

/**
 * Up to `limit` of the account's live uploads, newest first, from `start`, and how many it has
 * (kept, not counted: src/storage/listing-totals.ts). One batch; the page is read through
 * uploads_account_created, a keyset start reading no row before it.
 */
export async function listUploads(
  db: Database,
  accountId: string,
  now: number,
  start: PageStart<NewestKey>,
  limit: number,
) {
  const [rows, totals] = await db.batch([
    db
      .select()
      .from(uploads)
      .where(and(eq(uploads.accountId, accountId), live.where(now), newestAfter(uploads.createdAt, uploads.id, start)))
      .orderBy(desc(uploads.createdAt), desc(uploads.id))
      .limit(limit)
      .offset(skipped(start)),
    accountUploadTotal(db, accountId, now),
  ]);
  return { rows, total: totals[0]?.total ?? 0 };
}

export type UploadMetaPatch = Partial<
  Pick<
    UploadRow,
    | "visibility"
    | "title"
    | "description"
    | "passwordHash"
    | "maxViews"
    | "views"
    | "expiresAt"
    | "dedupHash"
    | "focalX"
    | "focalY"
  >
>;

/**
 * Applies `set` to the account's live upload if `only` holds, with its upload.updated event right
 * after it in the same batch, written only if it applied. Returns the row as it now is.
 */
async function updateOwned(
  deps: Outbox,
  accountId: string,
  id: string,
  set: Partial<UploadRow>,
  now: number,
  only?: SQL,
) {
  const { db } = deps;
  const [rows] = await batchWithEvents(deps, [
    db
      .update(uploads)
      .set({ ...set, updatedAt: now })
      .where(and(eq(uploads.id, id), eq(uploads.accountId, accountId), live.where(now), only))
      .returning(),
    uploadEvents(db, "upload.updated", and(eq(uploads.id, id), changedJustBefore)!, now),
  ]);
  return (rows as UploadRow[])[0];
}

export const updateUploadMeta = (deps: Outbox, accountId: string, id: string, patch: UploadMetaPatch, now: number) =>
  updateOwned(deps, accountId, id, patch, now);

/** As updateUploadMeta, but only while the upload is not served plainly (servedPlain in the policy). */
export const updateUploadMetaUnlessPlain = (
  deps: Outbox,
  accountId: string,
  id: string,
  patch: UploadMetaPatch,
  now: number,
) => updateOwned(deps, accountId, id, patch, now, not(servedPlain.where()));

export type MovedFiles = Pick<UploadRow, "objectKey" | "etag" | "thumbKey">;

/**
 * Points the upload at copies of its files under new keys and applies `patch`, if it still
 * points at the files copied (no replace or media job got there first). One UPDATE.
 */
export const moveUploadFiles = (
  deps: Outbox,
  accountId: string,
  id: string,
  from: Pick<UploadRow, "objectKey" | "thumbKey">,
  to: MovedFiles,
  patch: UploadMetaPatch,
  now: number,
) =>
  updateOwned(
    deps,
    accountId,
    id,
    { ...patch, ...to },
    now,
    and(
      eq(uploads.objectKey, from.objectKey),
      from.thumbKey === null ? isNull(uploads.thumbKey) : eq(uploads.thumbKey, from.thumbKey),
    ),
  );

export type ProcessedFile = Pick<
  UploadRow,
  "objectKey" | "mime" | "size" | "etag" | "width" | "height" | "thumbKey" | "duration" | "placeholder" | "color"
>;

/** The upload in any state, expired included (for its page, which answers 410 once expired). */
export function findUploadInAnyState(db: Database, id: string) {
  return db.select().from(uploads).where(eq(uploads.id, id)).get();
}

/** The files of the uploads among `ids` (at most ID_BATCH of them: D1 binds at most 100 values a query). */
export function uploadFilesOf(db: Database, ids: string[]) {
  return db
    .select({
      id: uploads.id,
      objectKey: uploads.objectKey,
      thumbKey: uploads.thumbKey,
      ladder: uploads.ladder,
      filesRemovedAt: uploads.filesRemovedAt,
    })
    .from(uploads)
    .where(inArray(uploads.id, ids));
}

type ReplacedFile = Pick<
  UploadRow,
  | "type"
  | "objectKey"
  | "mime"
  | "size"
  | "etag"
  | "width"
  | "height"
  | "animated"
  | "thumbKey"
  | "placeholder"
  | "color"
  | "contentHash"
  | "dedupHash"
  | "keepOriginal"
  | "processingState"
  | "processingPercent"
  | "processingError"
  | "processingUpdatedAt"
>;

/**
 * Points the upload at a new file, if it still points at `previousKey` (no other replace or
 * conversion got there first) and is still unrestricted (not locked or view-limited since the
 * replace checked it: the spec keeps such an upload's file). One UPDATE: readers see the old file
 * or the new one, never a mix. Returns the row as it is now, in a list (empty when it did not apply).
 */
export const fileReplacement = (db: Database, id: string, previousKey: string, file: ReplacedFile, now: number) =>
  db
    .update(uploads)
    // A new file has no ladder or length yet: its own media job reads and makes them.
    .set({ ...file, duration: null, ladder: null, updatedAt: now })
    .where(and(eq(uploads.id, id), eq(uploads.objectKey, previousKey), live.where(now), unrestricted.where()))
    .returning();

/** Notes that the upload's file `objectKey` is animated (served whole), if it is still its file. */
export async function markAnimated(db: Database, id: string, objectKey: string) {
  await db
    .update(uploads)
    .set({ animated: true })
    .where(and(eq(uploads.id, id), eq(uploads.objectKey, objectKey)));
}

/** Whether another upload of the account already answers duplicates of these bytes. */
export async function dedupSlotTaken(db: Database, accountId: string, contentHash: string, exceptId: string) {
  const row = await db
    .select({ id: uploads.id })
    .from(uploads)
    .where(and(eq(uploads.accountId, accountId), eq(uploads.dedupHash, contentHash)))
    .get();
  return !!row && row.id !== exceptId;
}

/**
 * Counts one view of a view-limited upload, if any are left: one UPDATE, so of many
 * simultaneous downloads exactly the limit's worth get through.
 */
export async function takeView(db: Database, id: string) {
  const [row] = await db
    .update(uploads)
    .set({ views: sql`${uploads.views} + 1` })
    .where(and(eq(uploads.id, id), viewLimited.where(), not(usedUp.where())))
    .returning({ views: uploads.views });
  return !!row;
}

/** Listed uploads (listed in src/model/policy.ts), newest first: the gallery, the sitemap and the feed. */
export function listedUploads(db: Database, now: number, limit: number, start: PageStart<NewestKey> = { offset: 0 }) {
  return db
    .select()
    .from(uploads)
    .where(and(listed.where(now), newestAfter(uploads.createdAt, uploads.id, start)))
    .orderBy(desc(uploads.createdAt), desc(uploads.id))
    .limit(limit)
    .offset(skipped(start));
}
