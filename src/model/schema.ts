import { sql } from "drizzle-orm";
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { VISIBILITIES } from "./visibility";
import { KEY_KINDS } from "./key-kinds";
import type { StoredLadder } from "./ladder";

/** Timestamps are Unix milliseconds (UTC) everywhere. */

export const accounts = sqliteTable(
  "accounts",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    bannedAt: integer("banned_at"),
    createdAt: integer("created_at").notNull(),
    /**
     * The operator's quotas for this account; null: the configured default (none: unlimited);
     * -1 (QUOTA_UNLIMITED in src/storage/usage.ts): unlimited whatever the default.
     */
    quotaBytes: integer("quota_bytes"),
    quotaUploads: integer("quota_uploads"),
    /**
     * What the account stores now (the sizes and number of its uploads whose files are still
     * stored), counted in the same transaction as each upload, replace, conversion, delete and
     * expiry, and reconciled with the uploads table by the cron job.
     */
    bytesUsed: integer("bytes_used").notNull().default(0),
    uploadsUsed: integer("uploads_used").notNull().default(0),
    /** When the cron job last reconciled the counters (0: never); the oldest go first. */
    usageCheckedAt: integer("usage_checked_at").notNull().default(0),
    /**
     * The secret the account signs image transform URLs with (`src?...&s=`): any size or quality
     * then, not only the ladder's. Made when first read, replaced when rotated (every URL signed
     * before stops working); null until then.
     */
    signingSecret: text("signing_secret"),
    signingSecretCreatedAt: integer("signing_secret_created_at"),
  },
  (t) => [index("accounts_usage_checked").on(t.usageCheckedAt)],
);

/** One current key per account and kind; only a SHA-256 of the key is kept. */
export const apiKeys = sqliteTable(
  "api_keys",
  {
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: KEY_KINDS }).notNull(),
    keyHash: text("key_hash").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.kind] }), uniqueIndex("api_keys_hash").on(t.keyHash)],
);

export const ipBans = sqliteTable("ip_bans", {
  ip: text("ip").primaryKey(),
  createdAt: integer("created_at").notNull(),
});

export const MEDIA_TYPES = ["image", "video"] as const;
export const PROCESSING_STATES = ["queued", "running", "ready", "failed"] as const;
export type ProcessingState = (typeof PROCESSING_STATES)[number];
export type MediaType = (typeof MEDIA_TYPES)[number];

export const uploads = sqliteTable(
  "uploads",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    type: text("type", { enum: MEDIA_TYPES }).notNull(),
    /** Current stored object in R2 and what it is. */
    objectKey: text("object_key").notNull(),
    mime: text("mime").notNull(),
    size: integer("size").notNull(),
    etag: text("etag").notNull(),
    width: integer("width"),
    height: integer("height"),
    /**
     * An animated image (GIF, an animated PNG or WebP): served whole, never cut to a frame, so it
     * has no variants. Known from the file's first bytes at upload; a row from before this column
     * learns it on its first variant request.
     */
    animated: integer("animated", { mode: "boolean" }).notNull().default(false),
    thumbKey: text("thumb_key"),
    /** SHA-256 (hex) of the bytes as received. */
    contentHash: text("content_hash").notNull(),
    /**
     * Equal to contentHash on the one upload that duplicate detection answers with, NULL
     * otherwise; the unique index makes two identical concurrent uploads collapse into one.
     */
    dedupHash: text("dedup_hash"),
    /** keep_original at upload: no optimisation to WebP (metadata is removed all the same). */
    keepOriginal: integer("keep_original", { mode: "boolean" }).notNull().default(false),
    visibility: text("visibility", { enum: VISIBILITIES }).notNull().default("unlisted"),
    title: text("title"),
    description: text("description"),
    expiresAt: integer("expires_at"),
    /**
     * When the cron job removed the files of an expired upload. The row stays a while longer,
     * so the upload's page can say it expired (410) rather than that it never existed.
     */
    filesRemovedAt: integer("files_removed_at"),
    /** PBKDF2 of the upload's password ("pbkdf2-sha256$iterations$salt$hash"); null when not locked. */
    passwordHash: text("password_hash"),
    /** The file is served this many times (views), then no more; null for no limit. */
    maxViews: integer("max_views"),
    views: integer("views").notNull().default(0),
    deleteTokenHash: text("delete_token_hash").notNull(),
    /**
     * Where the work after the upload stands (the API's `processing`): "queued" while its media
     * job waits, "running" while a runner works on it, "ready" once every planned output is
     * stored, "failed" when the job gave up (`processing_error` says why). Written with the job's
     * own writes, fenced on the file the job works from, so a replaced upload's old job never
     * writes the new file's state.
     */
    processingState: text("processing_state", { enum: PROCESSING_STATES }).notNull().default("ready"),
    /** 0-100 where the work reports it (a video's conversion), written at most every few seconds. */
    processingPercent: integer("processing_percent"),
    processingError: text("processing_error"),
    /** When the state or percent last changed; 0 on rows from before the column (their updated_at is shown). */
    processingUpdatedAt: integer("processing_updated_at").notNull().default(0),
    /** A video's length in seconds, once its media job has read it; null for images and before. */
    duration: real("duration"),
    /**
     * A video's HLS ladder (model/ladder.ts), once its media job stored it; null before, for
     * images, and whenever the file changes (the new file's job makes its own).
     */
    ladder: text("ladder", { mode: "json" }).$type<StoredLadder>(),
    /**
     * The owner's focal point, as fractions of the upright image's width and height (0,0 its top
     * left): what `gravity=auto` crops around. Null for none (then what matters is found).
     */
    focalX: real("focal_x"),
    focalY: real("focal_y"),
    /**
     * A ThumbHash of the thumbnail (base64, about 25 bytes) and its average colour (`#rrggbb`):
     * what pages paint until the image arrives. Null until made (at upload, on the next read, or by
     * the cron job's backfill), and for an upload without a thumbnail.
     */
    placeholder: text("placeholder"),
    color: text("color"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    index("uploads_account_created").on(t.accountId, t.createdAt, t.id),
    uniqueIndex("uploads_dedup").on(t.accountId, t.dedupHash).where(sql`dedup_hash IS NOT NULL`),
    index("uploads_account_hash").on(t.accountId, t.contentHash),
    // What an account stores (the usage sweep's sums): its counted uploads' sizes, read from the index alone.
    index("uploads_account_counted").on(t.accountId, t.size).where(sql`files_removed_at IS NULL`),
    // Flagging takes down every copy of the same bytes, whoever uploaded them.
    index("uploads_content_hash").on(t.contentHash),
    index("uploads_expires").on(t.expiresAt).where(sql`expires_at IS NOT NULL`),
    /*
     * Expiry's lag in the kept totals (src/storage/listing-totals.ts): the uploads past their
     * expires_at whose files the sweep has not removed yet, still counted by accounts.uploads_used
     * and listing_totals, found without reading any other row.
     */
    index("uploads_account_expiring")
      .on(t.accountId, t.expiresAt)
      .where(sql`expires_at IS NOT NULL AND files_removed_at IS NULL`),
    index("uploads_public_expiring")
      .on(t.expiresAt)
      .where(sql`visibility = 'public' AND expires_at IS NOT NULL AND files_removed_at IS NULL`),
    // The gallery, sitemap and feed: public uploads, newest first.
    index("uploads_public_created").on(t.createdAt, t.id).where(sql`visibility = 'public'`),
    // The cron job's backfill of placeholders: uploads with a thumbnail and none yet.
    index("uploads_placeholder_missing").on(t.id).where(sql`placeholder IS NULL AND thumb_key IS NOT NULL`),
  ],
);

export type UploadRow = typeof uploads.$inferSelect;

/**
 * Totals of the site's listings, kept by triggers on `uploads` and `albums` (migration 0023) in
 * the same transaction as every change to what they count, so no code path can forget one:
 * "uploads", the public uploads whose files are stored and which are not used up (the gallery's
 * and sitemap's uploads before expiry's lag, src/storage/listing-totals.ts), and "albums", the
 * public albums.
 */
export const listingTotals = sqliteTable("listing_totals", {
  listing: text("listing", { enum: ["uploads", "albums"] }).primaryKey(),
  total: integer("total").notNull().default(0),
});
export type NewUploadRow = typeof uploads.$inferInsert;

const JOB_STATUSES = ["pending", "running", "done", "failed"] as const;
/**
 * A job's part that is left: "file" (the file converted or stripped, its thumbnail), then, for a
 * video, "ladder" (its HLS ladder and storyboard, made from the file the first part stored).
 */
export const JOB_PHASES = ["file", "ladder"] as const;
export type JobPhase = (typeof JOB_PHASES)[number];

/**
 * Work on an upload's file that happens after the upload response (video conversion, metadata
 * removal, thumbnails). The row is the durable record: the cron job re-drives anything pending
 * or whose lease ran out, up to a bounded number of attempts.
 */
export const mediaJobs = sqliteTable(
  "media_jobs",
  {
    id: text("id").primaryKey(),
    uploadId: text("upload_id").notNull(),
    /** The object the job works from; if the upload no longer points at it, the job is obsolete. */
    sourceKey: text("source_key").notNull(),
    phase: text("phase", { enum: JOB_PHASES }).notNull().default("file"),
    /**
     * The UTC day (days since the epoch) whose video seconds the ladder phase was charged to; null
     * until charged. A job is charged once, however many attempts its ladder takes.
     */
    chargedDay: integer("charged_day"),
    status: text("status", { enum: JOB_STATUSES }).notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    /** While running: when another runner may take the job over (the first one died). */
    leaseUntil: integer("lease_until"),
    nextAttemptAt: integer("next_attempt_at").notNull(),
    lastError: text("last_error"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    uniqueIndex("media_jobs_source").on(t.uploadId, t.sourceKey),
    index("media_jobs_due").on(t.status, t.nextAttemptAt),
  ],
);

export type MediaJobRow = typeof mediaJobs.$inferSelect;

/**
 * Video seconds whose ladder an account's jobs started, per UTC day (`day`: days since the
 * epoch): the per-account daily limit on ladder work (VIDEO_MINUTES_PER_DAY).
 */
export const videoSeconds = sqliteTable(
  "video_seconds",
  {
    accountId: text("account_id").notNull(),
    day: integer("day").notNull(),
    seconds: real("seconds").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.day] })],
);

const PIECE_SESSION_STATUSES = ["open", "finishing", "consumed", "discarded"] as const;
export const PIECE_SENDERS = ["chunk", "tus"] as const;
export type PieceSender = (typeof PIECE_SENDERS)[number];

/**
 * A file sent in pieces to /api/chunk, under the client's upload_id (the spec's "chunk session",
 * whose name the tables keep). The row outlives the session as a tombstone (consumed or
 * discarded), so a finished or expired upload_id keeps answering 422 instead of quietly opening a
 * new session.
 */
export const pieceSessions = sqliteTable(
  "chunk_sessions",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    total: integer("total").notNull(),
    status: text("status", { enum: PIECE_SESSION_STATUSES }).notNull().default("open"),
    /** While finishing: when another request may take over (the first one died). */
    leaseUntil: integer("lease_until"),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    /**
     * Set by a first piece that can start the file as an R2 multipart upload (uploads/intake/
     * piece-parts.ts): the id of the upload the file is reserved for, its object's key (under
     * that upload's prefix), and the multipart upload's id.
     */
    fileUploadId: text("file_upload_id"),
    objectKey: text("object_key"),
    multipartId: text("multipart_id"),
    /** Part numbers handed out so far: each piece stored as a part gets one of its own. */
    partsBegun: integer("parts_begun").notNull().default(0),
    /** The multipart upload was completed: its pieces are now in the object at objectKey. */
    assembled: integer("assembled", { mode: "boolean" }).notNull().default(false),
    /**
     * Who sends the pieces: the client itself through /api/chunk, or the service, cutting a tus
     * upload's bytes into pieces (uploads/intake/tus/byte-writer.ts). Neither way may touch the
     * other's.
     */
    sender: text("sender", { enum: PIECE_SENDERS }).notNull().default("chunk"),
  },
  (t) => [
    index("chunk_sessions_status_expires").on(t.status, t.expiresAt),
    uniqueIndex("chunk_sessions_file_upload").on(t.fileUploadId),
  ],
);

/**
 * One row per stored piece; re-sending an index replaces it. Its bytes are in R2: an object of
 * their own under chunks/, or (with partNumber and partEtag) a part of the session's multipart
 * upload, which once completed holds them at objectOffset in the session's object.
 */
export const storedPieces = sqliteTable(
  "chunk_pieces",
  {
    sessionId: text("session_id")
      .notNull()
      .references(() => pieceSessions.id, { onDelete: "cascade" }),
    index: integer("index").notNull(),
    size: integer("size").notNull(),
    partNumber: integer("part_number"),
    partEtag: text("part_etag"),
    objectOffset: integer("object_offset"),
    /**
     * A piece stored as an object under a key of its own request (a tus upload's: its writer's
     * lease in the name, so that a writer that lost the lease never overwrites the piece); null
     * for the piece's one key, pieceKey.
     */
    objectKey: text("object_key"),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.index] })],
);

export type PieceSessionRow = typeof pieceSessions.$inferSelect;
export type StoredPieceRow = typeof storedPieces.$inferSelect;

const TUS_ENDINGS = ["finished", "terminated", "failed"] as const;

/**
 * A tus upload (/api/tus): a file whose bytes arrive at offsets, over as many requests as the
 * client likes. Its bytes become the pieces of the piece session of the same id, 5 MiB at a time;
 * the bytes of the piece being filled wait under chunks/{id}/tail/ until it is full. The row
 * outlives the upload as a tombstone, so that its URL answers 404 or 410 instead of being reused.
 */
export const tusUploads = sqliteTable(
  "tus_uploads",
  {
    id: text("id")
      .primaryKey()
      .references(() => pieceSessions.id, { onDelete: "cascade" }),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    /** Null until the client says (Upload-Defer-Length). */
    length: integer("length"),
    /** Bytes received and stored, in order from the first. */
    offset: integer("offset").notNull().default(0),
    /** The Upload-Metadata header as the client sent it, to give back on HEAD. */
    metadata: text("metadata"),
    /** The upload's options, checked at creation (JSON; the password already hashed). */
    fields: text("fields").notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    /**
     * The request writing its bytes now (its lease: the fencing token every write of the upload's
     * state checks), and when another may take over (it died).
     */
    writer: text("writer"),
    writerUntil: integer("writer_until"),
    /**
     * The tail fragments holding the bytes from the start of the piece being filled up to
     * `offset`, in order (JSON: [{key, start, size}]): set with `offset`, in the same statement,
     * so that only fragments a writer holding the lease wrote are ever part of the file.
     */
    tail: text("tail").notNull().default("[]"),
    /** How it ended: made into `uploadId`, terminated by the client, or refused by the pipeline. */
    ended: text("ended", { enum: TUS_ENDINGS }),
    /**
     * The id its upload is made with, chosen at creation (so that a finish that died after making
     * it is found), unless its pieces reserve one; once finished, the upload's.
     */
    uploadId: text("upload_id"),
    /** A refusal's status and message, given again to every later request. */
    failure: text("failure"),
  },
  (t) => [
    index("tus_uploads_expires").on(t.ended, t.expiresAt),
    // An account's unfinished ones, counted at each creation (MAX_OPEN_TUS_UPLOADS).
    index("tus_uploads_account").on(t.accountId, t.ended),
  ],
);

export type TusUploadRow = typeof tusUploads.$inferSelect;

/** An account's album: uploads gathered under one page and one link (`/a/{id}`). */
export const albums = sqliteTable(
  "albums",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    title: text("title"),
    description: text("description"),
    visibility: text("visibility", { enum: VISIBILITIES }).notNull().default("unlisted"),
    passwordHash: text("password_hash"),
    /** Whether the upload-only key may name it (the full key always may). */
    acceptsUploads: integer("accepts_uploads", { mode: "boolean" }).notNull().default(false),
    /** The upload its cards show; null: its first upload a visitor may see. */
    coverUploadId: text("cover_upload_id").references(() => uploads.id, { onDelete: "set null" }),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    index("albums_account_created").on(t.accountId, t.createdAt),
    index("albums_visibility_created").on(t.visibility, t.createdAt),
    // Deleting an upload looks for the albums it is the cover of (ON DELETE SET NULL).
    index("albums_cover").on(t.coverUploadId),
  ],
);

export type AlbumRow = typeof albums.$inferSelect;

/** An upload in an album, at a place in its order; an upload may be in several albums. */
export const albumUploads = sqliteTable(
  "album_uploads",
  {
    albumId: text("album_id")
      .notNull()
      .references(() => albums.id, { onDelete: "cascade" }),
    uploadId: text("upload_id")
      .notNull()
      .references(() => uploads.id, { onDelete: "cascade" }),
    position: integer("position").notNull(),
    addedAt: integer("added_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.albumId, t.uploadId] }),
    index("album_uploads_order").on(t.albumId, t.position),
    index("album_uploads_upload").on(t.uploadId),
  ],
);

export type AlbumUploadRow = typeof albumUploads.$inferSelect;

/** Terms that titles and descriptions may not contain, kept in their normalised form. */
export const blockedTerms = sqliteTable("blocked_terms", {
  normalized: text("normalized").primaryKey(),
  /** As the operator entered it. */
  term: text("term").notNull(),
  createdAt: integer("created_at").notNull(),
});

export type BlockedTermRow = typeof blockedTerms.$inferSelect;

/** SHA-256 of files an operator flagged: the same bytes are refused from then on, for everyone. */
export const flaggedContent = sqliteTable("flagged_content", {
  contentHash: text("content_hash").primaryKey(),
  uploadId: text("upload_id").notNull(),
  reason: text("reason"),
  createdAt: integer("created_at").notNull(),
});
