import { and, eq, isNotNull, isNull, lte, not, sql } from "drizzle-orm";
import { usedUp } from "../model/policy";
import { accounts, listingTotals, uploads } from "../model/schema";
import type { Database } from "./db";

/**
 * The totals of listings, read from counts that are kept rather than recounted, so that a
 * listing's cost does not grow with what it lists. Each kept count includes the uploads past
 * their expires_at that expiry's sweep has not reached yet (their files are still stored), which
 * no listing shows: each total subtracts them, found through a partial index of exactly those
 * rows (uploads_account_expiring, uploads_public_expiring), so the correction reads only the few
 * the sweep's lag leaves (it runs every few minutes) and the total stays what a count would say.
 */

/** Expired uploads whose files the sweep has not removed yet: still counted by the kept counts. */
const expiredUnswept = (now: number) =>
  and(isNotNull(uploads.expiresAt), isNull(uploads.filesRemovedAt), lte(uploads.expiresAt, now))!;

/**
 * How many live uploads the account has (what GET /api lists): its uploads_used (the uploads whose
 * files are stored, kept with every upload, delete and expiry; src/storage/usage.ts) less its
 * expired ones not swept yet. An upload's files are removed only once it has expired, and an
 * expired upload never comes back to life, so the two counts differ by exactly those.
 */
export const accountUploadTotal = (db: Database, accountId: string, now: number) =>
  db
    .select({
      // Columns named with their tables: drizzle leaves them bare in a query of one table.
      total: sql<number>`max(0, "accounts"."uploads_used" - (select count(*) from "uploads"
        where "uploads"."account_id" = "accounts"."id" and "uploads"."expires_at" is not null
        and "uploads"."files_removed_at" is null and "uploads"."expires_at" <= ${now}))`.mapWith(Number),
    })
    .from(accounts)
    .where(eq(accounts.id, accountId));

/**
 * How many uploads the site's listings hold (policy's listed): the kept count of public, stored,
 * not used-up uploads (listing_totals, kept by triggers) less the expired ones not swept yet.
 */
export async function listedUploadTotal(db: Database, now: number): Promise<number> {
  const lag = db
    .select({ n: sql<number>`count(*)` })
    .from(uploads)
    .where(and(eq(uploads.visibility, "public"), expiredUnswept(now), not(usedUp.where())));
  const [row] = await db
    .select({ total: sql<number>`max(0, ${listingTotals.total} - (${lag}))`.mapWith(Number) })
    .from(listingTotals)
    .where(eq(listingTotals.listing, "uploads"));
  return row?.total ?? 0;
}

/** How many public albums there are (albums do not expire: the kept count is the total). */
export async function publicAlbumTotal(db: Database): Promise<number> {
  const [row] = await db
    .select({ total: listingTotals.total })
    .from(listingTotals)
    .where(eq(listingTotals.listing, "albums"));
  return row?.total ?? 0;
}
