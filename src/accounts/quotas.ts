import { ApiError, notFound } from "../errors";
import type { Database } from "../storage/db";
import {
  QUOTA_UNLIMITED,
  readUsage,
  setQuotas,
  uploadsByDay,
  type AccountUsage,
  type DefaultQuotas,
} from "../storage/usage";

/**
 * An account's usage against the quotas in force, in the shape GET /api/usage answers with
 * (snake_case; null allowed: no limit). The quota checks read it too, so a refusal's numbers are
 * the ones that route shows. The stored counters and own quotas are an AccountUsage.
 */
export interface UsageAnswer {
  bytes_used: number;
  bytes_allowed: number | null;
  uploads_used: number;
  uploads_allowed: number | null;
}

const allowedOf = (own: number | null, fallback: number | null) => {
  const quota = own ?? fallback;
  return quota === null || quota === QUOTA_UNLIMITED || quota < 0 ? null : quota;
};

/** The account's stored usage against its own quotas, or the configured defaults where it has none. */
export function usageAgainst(usage: AccountUsage, defaults: DefaultQuotas): UsageAnswer {
  return {
    bytes_used: usage.bytesUsed,
    bytes_allowed: allowedOf(usage.quotaBytes, defaults.bytes),
    uploads_used: usage.uploadsUsed,
    uploads_allowed: allowedOf(usage.quotaUploads, defaults.uploads),
  };
}

/** The account's usage as GET /api/usage answers it, read from D1. */
export async function readUsageAnswer(db: Database, accountId: string, defaults: DefaultQuotas): Promise<UsageAnswer> {
  const usage = await readUsage(db, accountId);
  if (!usage) throw new Error(`account ${accountId} has no row`);
  return usageAgainst(usage, defaults);
}

const MiB = 1024 * 1024;

/** Bytes as people read them, in the service's MB (MiB), KB below one. */
export function readableBytes(bytes: number): string {
  const [value, unit] = bytes >= MiB ? [bytes / MiB, "MB"] : [bytes / 1024, "KB"];
  return `${Number.isInteger(value) ? value : value.toFixed(1)} ${unit}`;
}

/**
 * The refusal of a file of `size` bytes that would take the account past a quota (413, the
 * spec's status for a file too large to take), saying what is used and allowed; null when it fits.
 * `replacing`: the size of the file it would replace (given back, and no new upload).
 */
export function quotaRefusal(usage: UsageAnswer, size: number, replacing?: number): ApiError | null {
  const newUpload = replacing === undefined;
  if (newUpload && usage.uploads_allowed !== null && usage.uploads_used + 1 > usage.uploads_allowed) {
    return new ApiError(
      413,
      `Upload quota reached: ${usage.uploads_used} of ${usage.uploads_allowed} uploads used. ` +
        "Delete uploads to make room.",
    );
  }
  const after = usage.bytes_used - (replacing ?? 0) + size;
  if (usage.bytes_allowed !== null && after > usage.bytes_allowed && size > (replacing ?? 0)) {
    return new ApiError(
      413,
      `Storage quota reached: ${readableBytes(usage.bytes_used)} of ${readableBytes(usage.bytes_allowed)} used ` +
        `(${usage.bytes_used} of ${usage.bytes_allowed} bytes); this file needs ${readableBytes(size)}` +
        `${newUpload ? "" : `, the file it replaces frees ${readableBytes(replacing)}`}.`,
    );
  }
  return null;
}

/** Throws the refusal of a file of `size` bytes, if any (see quotaRefusal). */
export function assertWithinQuota(usage: UsageAnswer, size: number, replacing?: number) {
  const refusal = quotaRefusal(usage, size, replacing);
  if (refusal) throw refusal;
}

/**
 * The refusal of a charge the database refused (QUOTA_VIOLATION), from the usage read after it:
 * by then other uploads may have been removed, so it may fit now; it is refused all the same, and
 * the client may send it again.
 */
export function refusedCharge(usage: UsageAnswer, size: number, replacing?: number): ApiError {
  return (
    quotaRefusal(usage, size, replacing) ??
    new ApiError(
      413,
      `Quota reached while this file was being stored (now ${readableBytes(usage.bytes_used)} and ` +
        `${usage.uploads_used} uploads used); try again.`,
    )
  );
}

/** An operator's quota for one account: a number, null for the configured default, or "unlimited". */
export type QuotaSetting = number | null | "unlimited";

/** The account's quotas as set (null: the default), and its usage against those in force. */
export interface AccountQuotas extends UsageAnswer {
  id: string;
  quota_bytes: QuotaSetting;
  quota_uploads: QuotaSetting;
}

const settingOf = (own: number | null): QuotaSetting => (own === null ? null : own < 0 ? "unlimited" : own);
/** A setting as accounts' columns keep it (undefined: left as it is). */
export const storedOf = (setting: QuotaSetting | undefined) => (setting === "unlimited" ? QUOTA_UNLIMITED : setting);

function accountQuotasOf(id: string, usage: AccountUsage, defaults: DefaultQuotas): AccountQuotas {
  return {
    id,
    quota_bytes: settingOf(usage.quotaBytes),
    quota_uploads: settingOf(usage.quotaUploads),
    ...usageAgainst(usage, defaults),
  };
}

/**
 * Sets the operator's quotas of an account (a quota left out stays as it is) and answers with
 * them and its usage; 404 for no such account. A quota below what the account already stores
 * refuses its next uploads and takes nothing away.
 */
export async function setAccountQuotas(
  db: Database,
  accountId: string,
  quotas: { quota_bytes?: QuotaSetting; quota_uploads?: QuotaSetting },
  defaults: DefaultQuotas,
): Promise<AccountQuotas> {
  const row = await setQuotas(db, accountId, {
    quotaBytes: storedOf(quotas.quota_bytes),
    quotaUploads: storedOf(quotas.quota_uploads),
  });
  if (!row) throw notFound("No such account.");
  return accountQuotasOf(row.id, row, defaults);
}

export async function getAccountQuotas(db: Database, accountId: string, defaults: DefaultQuotas) {
  const usage = await readUsage(db, accountId);
  if (!usage) throw notFound("No such account.");
  return accountQuotasOf(accountId, usage, defaults);
}

const DAY_MS = 86_400_000;
/** The days the usage chart shows, today among them. */
export const USAGE_DAYS = 30;
/** Uploads the chart reads at most: past that, its days count only the newest. */
const USAGE_CHART_UPLOADS = 20_000;

/**
 * The last USAGE_DAYS UTC days, oldest first, each with the uploads the account made that day that
 * it still stores, and their bytes (0 on a day with none); `complete` is false when the account
 * made more than the chart reads, and the oldest days count fewer than they had.
 */
export async function usageByDay(db: Database, accountId: string, now: number) {
  const today = Math.floor(now / DAY_MS);
  const first = today - USAGE_DAYS + 1;
  const found = await uploadsByDay(db, accountId, first * DAY_MS, USAGE_CHART_UPLOADS);
  const byDay = new Map(found.days.map((d) => [d.day, d]));
  const days = Array.from({ length: USAGE_DAYS }, (_, i) => {
    const day = first + i;
    const seen = byDay.get(day);
    return {
      date: new Date(day * DAY_MS).toISOString().slice(0, 10),
      uploads: seen?.uploads ?? 0,
      bytes: seen?.bytes ?? 0,
    };
  });
  return { days, complete: found.complete };
}
