import { and, asc, eq, inArray, isNull, lt, sql, type AnyColumn, type SQL } from "drizzle-orm";
import type { Database } from "./db";
import { compiled } from "./compiled";
import { accounts, uploads } from "../model/schema";

/**
 * What an account stores, as its counters say (`bytes_used`, `uploads_used`), and its own quotas
 * (null: the configured default; QUOTA_UNLIMITED: none).
 */
export interface AccountUsage {
  bytesUsed: number;
  uploadsUsed: number;
  quotaBytes: number | null;
  quotaUploads: number | null;
}

/** The configured defaults, from settings: null for none (unlimited). */
export interface DefaultQuotas {
  bytes: number | null;
  uploads: number | null;
}

/** An account's own quota that means "no limit", whatever the default. */
export const QUOTA_UNLIMITED = -1;

const usageColumns = {
  bytesUsed: accounts.bytesUsed,
  uploadsUsed: accounts.uploadsUsed,
  quotaBytes: accounts.quotaBytes,
  quotaUploads: accounts.quotaUploads,
};

/** The account's usage and quotas, as a list of at most one row (for a batch). */
export const usageOf = (db: Database, accountId: string) =>
  db.select(usageColumns).from(accounts).where(eq(accounts.id, accountId));

export async function readUsage(db: Database, accountId: string): Promise<AccountUsage | undefined> {
  return (await usageOf(db, accountId))[0];
}

/** SQL: whether `used + more` stays within the account's quota `own`, or the default when it has none. */
function fits(own: AnyColumn, fallback: unknown, used: SQL) {
  const quota = sql`coalesce(${own}, ${fallback})`;
  return sql`(${quota} IS NULL OR ${quota} < 0 OR ${used} <= ${quota})`;
}

/**
 * The message a failed charge's batch fails with: a charge that would pass the quota writes NULL
 * into a NOT NULL column, which fails its statement and so rolls back the whole batch (one D1
 * transaction), the upload's row with it.
 */
export const QUOTA_VIOLATION = "NOT NULL constraint failed: accounts.bytes_used";

/** Whether `error` (or what it wraps) is a charge refused by the quota. */
export function isQuotaViolation(error: unknown): boolean {
  for (let e = error; e instanceof Error; e = e.cause) if (e.message.includes(QUOTA_VIOLATION)) return true;
  return false;
}

const chargeStatement = compiled<{
  accountId: string;
  uploadId: string;
  size: number;
  defaultBytes: number | null;
  defaultUploads: number | null;
}>((db, p) => {
  const allowed = sql`${fits(accounts.quotaBytes, p("defaultBytes"), sql`${accounts.bytesUsed} + ${p("size")}`)}
    AND ${fits(accounts.quotaUploads, p("defaultUploads"), sql`${accounts.uploadsUsed} + 1`)}`;
  return db
    .update(accounts)
    .set({
      bytesUsed: sql`CASE WHEN ${allowed} THEN ${accounts.bytesUsed} + ${p("size")} END`,
      uploadsUsed: sql`${accounts.uploadsUsed} + 1`,
    })
    .where(
      and(
        eq(accounts.id, p("accountId")),
        sql`EXISTS (SELECT 1 FROM ${uploads} WHERE ${uploads.id} = ${p("uploadId")})`,
      ),
    );
});

/**
 * Charges the account for a new upload of `size` bytes, if its row `uploadId` exists (it was
 * inserted earlier in the same batch, not lost to a duplicate); past either quota it fails the
 * batch (QUOTA_VIOLATION). One statement: concurrent charges are serialised by D1. Written once
 * per isolate (compiled.ts): every upload makes one.
 */
export const chargeNewUpload = (
  db: Database,
  input: { accountId: string; uploadId: string; size: number; defaults: DefaultQuotas },
) => {
  const { accountId, uploadId, size, defaults } = input;
  return chargeStatement(db, {
    accountId,
    uploadId,
    size,
    defaultBytes: defaults.bytes,
    defaultUploads: defaults.uploads,
  }).run();
};

/**
 * Moves the account's bytes from a replaced file (`previousSize`) to its new one (`size`), if the
 * upload now points at `objectKey` (the replacement applied earlier in the same batch). A larger
 * file that would pass the quota fails the batch (QUOTA_VIOLATION).
 */
export const chargeReplacement = (
  db: Database,
  input: { accountId: string; uploadId: string; objectKey: string; previousSize: number; size: number },
  defaults: DefaultQuotas,
) => {
  const { accountId, uploadId, objectKey, previousSize, size } = input;
  const after = sql`${accounts.bytesUsed} - ${previousSize} + ${size}`;
  const allowed = size <= previousSize ? sql`1` : fits(accounts.quotaBytes, defaults.bytes, after);
  return db
    .update(accounts)
    .set({ bytesUsed: sql`CASE WHEN ${allowed} THEN ${after} END` })
    .where(
      and(
        eq(accounts.id, accountId),
        sql`EXISTS (SELECT 1 FROM ${uploads}
          WHERE ${uploads.id} = ${uploadId} AND ${uploads.objectKey} = ${objectKey})`,
      ),
    );
};

/**
 * Gives back to their accounts what the uploads matching `where` hold, if their files are still
 * counted (not yet removed by expiry). Goes in a batch before the statement that deletes them or
 * marks their files removed, on the same condition, so both see the same rows.
 */
export const releaseUploads = (db: Database, where: SQL) => {
  const counted = and(where, isNull(uploads.filesRemovedAt), sql`${uploads.accountId} = ${accounts.id}`);
  const bytes = sql`(SELECT coalesce(sum(${uploads.size}), 0) FROM ${uploads} WHERE ${counted})`;
  return db
    .update(accounts)
    .set({
      bytesUsed: sql`${accounts.bytesUsed} - ${bytes}`,
      uploadsUsed: sql`${accounts.uploadsUsed} - (SELECT count(*) FROM ${uploads} WHERE ${counted})`,
    })
    .where(
      inArray(
        accounts.id,
        db
          .select({ id: uploads.accountId })
          .from(uploads)
          .where(and(where, isNull(uploads.filesRemovedAt))),
      ),
    );
};

/**
 * Adds a processed file's change of size (a conversion, a remux) to its account, if the upload
 * still points at `sourceKey`. Never refused: the file is the upload's own, made after its
 * answer. Goes in a batch before the statement that swaps the file.
 */
export const chargeProcessedFile = (db: Database, uploadId: string, sourceKey: string, size: number, also?: SQL) => {
  const source = and(eq(uploads.id, uploadId), eq(uploads.objectKey, sourceKey), also);
  return db
    .update(accounts)
    .set({ bytesUsed: sql`${accounts.bytesUsed} + ${size} - (SELECT ${uploads.size} FROM ${uploads} WHERE ${source})` })
    .where(inArray(accounts.id, db.select({ id: uploads.accountId }).from(uploads).where(source)));
};

/** The operator's quotas for one account (null: the default; QUOTA_UNLIMITED: none); undefined keeps one. */
export async function setQuotas(
  db: Database,
  accountId: string,
  quotas: { quotaBytes?: number | null; quotaUploads?: number | null },
) {
  const [row] = await db
    .update(accounts)
    .set(quotas)
    .where(eq(accounts.id, accountId))
    .returning({ id: accounts.id, ...usageColumns });
  return row;
}

/**
 * The accounts whose counters were last checked before `checkedBefore`, longest ago first, `limit`
 * of them, with what they say now (read through accounts_usage_checked: `limit` rows at most).
 */
export function accountsToReconcile(db: Database, limit: number, checkedBefore: number) {
  return db
    .select({ id: accounts.id, bytesUsed: accounts.bytesUsed, uploadsUsed: accounts.uploadsUsed })
    .from(accounts)
    .where(lt(accounts.usageCheckedAt, checkedBefore))
    .orderBy(asc(accounts.usageCheckedAt), asc(accounts.id))
    .limit(limit);
}

/**
 * Sets the counters of `ids` (at most 90: D1 binds at most 100 values a query) to what the uploads
 * table says they store, in one statement, so no upload's own charge can fall between the count
 * and the write. Each sum reads the partial index uploads_account_counted alone (account, size, of
 * the uploads whose files are stored): one index entry per counted upload and sum, never the
 * table's rows or another account's. Returns the counters as set.
 */
export function reconcileUsage(db: Database, ids: string[], now: number) {
  const counted = and(eq(uploads.accountId, accounts.id), isNull(uploads.filesRemovedAt));
  return db
    .update(accounts)
    .set({
      bytesUsed: sql`(SELECT coalesce(sum(${uploads.size}), 0) FROM ${uploads} WHERE ${counted})`,
      uploadsUsed: sql`(SELECT count(*) FROM ${uploads} WHERE ${counted})`,
      usageCheckedAt: now,
    })
    .where(inArray(accounts.id, ids))
    .returning({ id: accounts.id, bytesUsed: accounts.bytesUsed, uploadsUsed: accounts.uploadsUsed });
}

/**
 * Per UTC day from `since` on: the uploads the account made that are still stored, and their
 * bytes. At most `most` uploads are read (newest first, on uploads_account_created), so the read is
 * bounded however many it made; `complete` says whether every one since `since` was counted.
 */
export async function uploadsByDay(db: Database, accountId: string, since: number, most: number) {
  const recent = db
    .select({ day: sql<number>`${uploads.createdAt} / 86400000`.as("day"), size: uploads.size })
    .from(uploads)
    .where(and(eq(uploads.accountId, accountId), sql`${uploads.createdAt} >= ${since}`, isNull(uploads.filesRemovedAt)))
    .orderBy(sql`${uploads.createdAt} DESC`)
    .limit(most + 1)
    .as("recent");
  const rows = await db
    .select({
      day: recent.day,
      uploads: sql<number>`count(*)`.mapWith(Number),
      bytes: sql<number>`sum(${recent.size})`.mapWith(Number),
    })
    .from(recent)
    .groupBy(sql`day`);
  const read = rows.reduce((n, row) => n + row.uploads, 0);
  return {
    days: rows.map((row) => ({ day: Number(row.day), uploads: row.uploads, bytes: row.bytes })),
    complete: read <= most,
  };
}
