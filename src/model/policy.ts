import { and, eq, gt, gte, inArray, isNotNull, isNull, lte, not, or, sql, type SQL } from "drizzle-orm";
import { uploads, type MediaJobRow, type UploadRow } from "./schema";

/**
 * The rules about an upload's state, each written once. A rule that queries filter by is an
 * object: `of` decides it on a row, `where` is the same rule over the uploads table, for a
 * query's WHERE (test/worker/uploads/policy.test.ts checks that both agree on every state).
 * A rule only ever decided on a row is a function.
 */

/**
 * Images stored as WebP and never served before that (awaitsConversion): HEIC, HEIF
 * and TIFF (the spec), and AVIF, whose metadata (EXIF, XMP items) sits in the same HEIF
 * structure and is removed the same way.
 */
export const CONVERTED_TO_WEBP: ReadonlySet<string> = new Set(["image/heic", "image/heif", "image/tiff", "image/avif"]);

type Row<K extends keyof UploadRow> = Pick<UploadRow, K>;

/** Past its `expires_at`: gone for every reader from that moment, whether or not swept yet. */
export const expired = {
  of: (row: Row<"expiresAt">, now: number) => row.expiresAt !== null && row.expiresAt <= now,
  // With the NULL test, NOT of it is exactly "live": no NULL leaves a row out of both.
  where: (now: number): SQL => and(isNotNull(uploads.expiresAt), lte(uploads.expiresAt, now))!,
};

/** Not expired: what every read of an upload as it is now adds. */
export const live = {
  of: (row: Row<"expiresAt">, now: number) => !expired.of(row, now),
  where: (now: number): SQL => or(isNull(uploads.expiresAt), gt(uploads.expiresAt, now))!,
};

/** Password-protected: its files go only through signed links, its page asks for the password. */
export const locked = {
  of: <R extends Row<"passwordHash">>(row: R): row is R & { passwordHash: string } => row.passwordHash !== null,
  where: (): SQL => isNotNull(uploads.passwordHash),
};

/** Its file is served `max_views` times, then no more. */
export const viewLimited = {
  of: (row: Row<"maxViews">) => row.maxViews !== null,
  where: (): SQL => isNotNull(uploads.maxViews),
};

/**
 * Neither locked nor view-limited: its file goes to anyone holding a URL, as often as asked. Only
 * such an upload's file may be kept by caches, shown in link previews and embeds, and replaced:
 * a locked one's is behind its password, and every fetch of a view-limited one's is a view (a
 * chat app's preview would spend them).
 */
export const unrestricted = {
  of: (row: Row<"passwordHash" | "maxViews">) => !locked.of(row) && !viewLimited.of(row),
  where: (): SQL => and(isNull(uploads.passwordHash), isNull(uploads.maxViews))!,
};

/** View-limited with its views used up: its files answer 410 and its page says it is gone. */
export const usedUp = {
  of: (row: Row<"maxViews" | "views">) => row.maxViews !== null && row.views >= row.maxViews,
  where: (): SQL => and(isNotNull(uploads.maxViews), gte(uploads.views, uploads.maxViews))!,
};

/**
 * Still in a type it is converted from (CONVERTED_TO_WEBP): such a file carries its camera
 * metadata, so it is never served; its media job swaps it for the WebP.
 */
export const awaitsConversion = {
  of: (row: Row<"mime">) => CONVERTED_TO_WEBP.has(row.mime),
  where: (): SQL => inArray(uploads.mime, [...CONVERTED_TO_WEBP]),
};

type JobState = Pick<MediaJobRow, "uploadId" | "sourceKey" | "status">;

const toRun = (job: JobState) => job.status === "pending" || job.status === "running";

/** A media job is still to run on the upload's current file (its thumbnail or conversion is to come). */
export const mediaJobToCome = {
  of: (row: Row<"id" | "objectKey">, jobs: readonly JobState[]) =>
    jobs.some((job) => job.uploadId === row.id && job.sourceKey === row.objectKey && toRun(job)),
  where: (): SQL =>
    sql`exists (select 1 from media_jobs where media_jobs.upload_id = uploads.id
      and media_jobs.source_key = uploads.object_key and media_jobs.status in ('pending', 'running'))`,
};

/**
 * Served as it is to anyone holding the URL: unrestricted, not awaiting a conversion, no media
 * job to come. Only such an upload's files are remembered in serving records (serving/record.ts),
 * and only then does a change to how they are served move them (change.ts).
 */
export const servedPlain = {
  of: (row: Row<"id" | "objectKey" | "mime" | "passwordHash" | "maxViews">, jobs: readonly JobState[]) =>
    unrestricted.of(row) && !awaitsConversion.of(row) && !mediaJobToCome.of(row, jobs),
  where: (): SQL => and(unrestricted.where(), not(awaitsConversion.where()), not(mediaJobToCome.where()))!,
};

const isPublic = (row: Row<"visibility">) => row.visibility === "public";

/**
 * In the site's listings (gallery, sitemap, feed): live public uploads, but no used-up one (its
 * page says only that it is gone, so no listing may say more). Locked and view-limited ones are
 * listed as their page shows them without the password.
 */
export const listed = {
  of: (row: Row<"visibility" | "expiresAt" | "maxViews" | "views">, now: number) =>
    isPublic(row) && live.of(row, now) && !usedUp.of(row),
  where: (now: number): SQL => and(eq(uploads.visibility, "public"), live.where(now), not(usedUp.where()))!,
};

/**
 * Shown on the pages of the albums it is in: live, not private (a private upload's link leads
 * only to its file, so no page may list it), and not used up (its page says only that it is
 * gone). A locked or view-limited one is shown as the listings show it: by what its page shows
 * without the password, never by its file.
 */
export const shownInAlbums = {
  of: (row: Row<"visibility" | "expiresAt" | "maxViews" | "views">, now: number) =>
    row.visibility !== "private" && live.of(row, now) && !usedUp.of(row),
  where: (now: number): SQL => and(not(eq(uploads.visibility, "private")), live.where(now), not(usedUp.where()))!,
};

/**
 * May stand for its album in link previews and listings (the album's cover): shown in albums,
 * unrestricted (link previews never show a locked or view-limited file) and not awaiting its
 * conversion. The cover also needs a thumbnail, which the query asks for itself.
 */
export const albumCover = {
  of: (row: Row<"visibility" | "expiresAt" | "maxViews" | "views" | "passwordHash" | "mime">, now: number) =>
    shownInAlbums.of(row, now) && unrestricted.of(row) && !awaitsConversion.of(row),
  where: (now: number): SQL => and(shownInAlbums.where(now), unrestricted.where(), not(awaitsConversion.where()))!,
};

/**
 * Its files may be indexed (no X-Robots-Tag) and, if unrestricted, kept by shared caches: a
 * public upload's. A locked public upload's carry no noindex either: they go only through
 * signed links, which only the owner and whoever gave the password are handed.
 */
export const filesIndexable = (row: Row<"visibility">) => isPublic(row);

/**
 * Its page may be indexed: a public upload's, unless locked, whose page shows the file only to
 * someone who gave the password.
 */
export const pageIndexable = (row: Row<"visibility" | "passwordHash">) => isPublic(row) && !locked.of(row);

/**
 * Its HLS ladder's playlists and files go only through signed links: a locked or view-limited
 * upload's, as its file does, and a private one's too, whose page sends visitors to the file
 * alone, so no one but its owner (through the API) is handed a way to play it.
 */
export const signedPlayback = (row: Row<"visibility" | "passwordHash" | "maxViews">) =>
  row.visibility === "private" || !unrestricted.of(row);

/** Other sites may frame its player and oEmbed may describe it: not private, and unrestricted. */
export const embeddable = (row: Row<"visibility" | "passwordHash" | "maxViews">) =>
  row.visibility !== "private" && unrestricted.of(row);
