import { z } from "zod";
import { VARIANT_WIDTHS } from "../uploads/variants/options";
import { DESCRIPTION_MAX, EXPIRES_IN_MAX, EXPIRES_IN_MIN, PIECE_BYTES, TITLE_MAX } from "../model/spec-limits";
import { MAX_PIECES, SESSION_ID_PATTERN } from "../uploads/intake/piece-sessions";
import { VISIBILITIES } from "../model/visibility";
import { isXmlText } from "../model/xml-text";
import { MAX_ALBUM_IDS_PER_REQUEST, UPLOADS_DELETED_PER_REQUEST } from "../uploads/albums/albums";

/**
 * Request and response schemas of the API. They validate requests and are the source of the
 * OpenAPI document (src/api/openapi.ts), so the two cannot drift apart.
 */

const TRUE = ["1", "true", "yes", "on"];
const FALSE = ["0", "false", "no", "off"];

/** Form booleans: 1/0, true/false, yes/no, on/off (any case), or a JSON boolean. */
const booleanField = z
  .union([
    z.boolean(),
    z.string().refine((s) => [...TRUE, ...FALSE].includes(s.trim().toLowerCase()), {
      message: "must be one of 1/0, true/false, yes/no, on/off",
    }),
  ])
  .transform((v) => (typeof v === "boolean" ? v : TRUE.includes(v.trim().toLowerCase())))
  .meta({ description: "Boolean: 1/0, true/false, yes/no or on/off." });

const characters = (s: string) => [...s].length;

/**
 * Text that may be cleared: an empty (or all-space) value becomes null. Characters XML does not
 * allow (controls other than tab and line breaks, U+FFFE, U+FFFF, unpaired surrogates) are
 * refused rather than stored: they are never meant as text, and the feed would have to replace
 * them (xml.ts) with something the uploader did not write.
 */
const clearableText = (field: string, max: number) =>
  z
    .string()
    .nullable()
    .transform((s) => (s === null ? null : s.trim() || null))
    .refine((s) => s === null || characters(s) <= max, { message: `must be at most ${max} characters` })
    .refine((s) => s === null || isXmlText(s), {
      message:
        "must not contain control characters other than tab and line breaks, U+FFFE, U+FFFF or unpaired surrogates",
    })
    .meta({
      description:
        `${field}, at most ${max} characters, without control characters other than tab and line breaks. ` +
        "An empty value clears it.",
    });

const visibilityField = z.enum(VISIBILITIES, {
  message: `must be one of ${VISIBILITIES.join(", ")}`,
});

const wholeNumber = (min: number, max: number) =>
  z
    .union([z.number(), z.string().regex(/^\s*\d+\s*$/, { message: "must be a whole number" })])
    .transform(Number)
    .pipe(
      z
        .number()
        .int({ message: "must be a whole number" })
        .min(min, { message: `must be at least ${min}` })
        .max(max, { message: `must be at most ${max}` }),
    );

/** Extension: a password makes the upload `locked` (its files only through signed links). */
const passwordField = z.string().max(128, { message: "must be at most 128 characters" }).meta({
  description: "Extension: protects the upload with this password (locked). On PATCH an empty value removes it.",
});

const MAX_VIEWS_LIMIT = 1_000_000;
/** Extension: the file is served this many times, then no more. */
const maxViewsField = wholeNumber(1, MAX_VIEWS_LIMIT).meta({
  description:
    "Extension: the file is served this many times (downloads from the start), then no more. " +
    "On PATCH an empty value removes the limit; setting it starts the count afresh.",
});

const expiresInField = wholeNumber(EXPIRES_IN_MIN, EXPIRES_IN_MAX);

/** An album's or upload's id as a request names it: 10 base62 characters (anything else names none). */
const ID_PATTERN = /^[0-9A-Za-z]{10}$/;
const albumIdField = z.string().trim().regex(ID_PATTERN, { message: "must be an album id (10 letters and digits)" });

/** Text fields of POST /api (the file itself is the `uploads` part). */
export const uploadFields = z.object({
  url: z.string().optional().meta({ description: "Public http(s) link to an image or video." }),
  upload_id: z.string().optional().meta({ description: "Id of a file sent in pieces to /api/chunk." }),
  filename: z.string().max(255).optional().meta({ description: "Original file name, with upload_id." }),
  expires_in: expiresInField
    .optional()
    .meta({ description: `Seconds until automatic deletion, ${EXPIRES_IN_MIN} to ${EXPIRES_IN_MAX}.` }),
  allow_duplicate: booleanField.optional(),
  keep_original: booleanField.optional(),
  visibility: visibilityField.optional(),
  title: clearableText("Title", TITLE_MAX).optional(),
  description: clearableText("Description", DESCRIPTION_MAX).optional(),
  password: passwordField.optional(),
  max_views: maxViewsField.optional(),
  album: albumIdField.optional().meta({
    description:
      "Extension: the id of one of the account's albums; the upload (or, for a duplicate sent with the full key, " +
      "the existing upload) is added at its end. The upload-only key may name only an album that accepts uploads " +
      "(`accepts_uploads`). Checked before any byte is stored: another account's, an unknown album, or for the " +
      "upload-only key one that does not accept uploads, is a 422.",
  }),
});

/** Text fields of POST /api/chunk (the piece itself is the `chunk` part). */
export const chunkFields = z.object({
  upload_id: z
    .string()
    .regex(SESSION_ID_PATTERN, { message: "must be 32 hexadecimal characters" })
    .meta({ description: "Chosen by the client: 32 random hexadecimal characters, the same for every piece." }),
  index: wholeNumber(0, MAX_PIECES - 1).meta({ description: "Position of the piece, from 0." }),
  total: wholeNumber(1, MAX_PIECES).meta({
    description: `Number of pieces, at most ${MAX_PIECES}; the same for every piece.`,
  }),
});

export const changeBody = z.object({
  visibility: visibilityField.optional(),
  title: clearableText("Title", TITLE_MAX).optional(),
  description: clearableText("Description", DESCRIPTION_MAX).optional(),
  password: passwordField
    .nullable()
    .transform((p) => p || null)
    .optional(),
  max_views: z
    .union([z.literal(""), z.null(), maxViewsField])
    .transform((v) => (v === "" || v === null ? null : v))
    .optional(),
  expires_in: z
    .union([z.literal(""), z.null(), expiresInField])
    .transform((v) => (v === "" || v === null ? null : v))
    .optional()
    .meta({
      description:
        "Extension: seconds from now until automatic deletion, " +
        `${EXPIRES_IN_MIN} to ${EXPIRES_IN_MAX}. An empty value or null removes the expiry.`,
    }),
});

export const listQuery = z.object({
  page: wholeNumber(1, Number.MAX_SAFE_INTEGER)
    .optional()
    .default(1)
    .meta({ description: "Page number, from 1. A page past last_page returns an empty data array." }),
});

/* Albums (extension) */

const coverField = z
  .union([z.literal(""), z.null(), z.string().trim().regex(ID_PATTERN, { message: "must be an upload id" })])
  .transform((v) => v || null)
  .meta({ description: "The id of an upload in the album, shown as its cover. An empty value or null: none." });

const albumPasswordField = passwordField.meta({
  description: "Protects the album's page with this password. On PATCH an empty value or null removes it.",
});

/** POST /api/albums. */
export const albumCreateBody = z.object({
  title: clearableText("Title", TITLE_MAX).optional(),
  description: clearableText("Description", DESCRIPTION_MAX).optional(),
  visibility: visibilityField.optional().meta({
    description:
      "unlisted (the default: its page for whoever has the link), private (not shown on the site) or public " +
      "(listed on the site).",
  }),
  password: albumPasswordField.optional(),
  accepts_uploads: booleanField.optional().meta({
    description:
      "Whether the upload-only key may name the album as `album` when uploading (default false; the full key " +
      "always may). For the upload-only key an album that does not accept uploads is refused as an unknown one.",
  }),
});

/** PATCH /api/albums/{id}: only the fields sent change. */
export const albumChangeBody = albumCreateBody.extend({
  password: albumPasswordField
    .nullable()
    .transform((p) => p || null)
    .optional(),
  cover: coverField.optional(),
});

/** A list of upload ids: a JSON array, or (in a form) the ids separated by commas or spaces. */
export const albumUploadsBody = z.object({
  uploads: z
    .union([
      z.array(z.string().max(64, { message: "must be an upload id" })),
      z
        .string()
        .max(64 * MAX_ALBUM_IDS_PER_REQUEST)
        .transform((s) => s.split(/[\s,]+/).filter(Boolean)),
    ])
    .pipe(
      z
        .array(z.string())
        .min(1, { message: "must name at least one upload id" })
        .max(MAX_ALBUM_IDS_PER_REQUEST, { message: `must name at most ${MAX_ALBUM_IDS_PER_REQUEST} uploads` }),
    )
    .meta({
      description:
        `Upload ids, at most ${MAX_ALBUM_IDS_PER_REQUEST}: a JSON array, or in a form one value of ids separated by ` +
        "commas or spaces.",
    }),
});

export const albumDeleteQuery = z.object({
  delete_uploads: booleanField.optional().meta({
    description:
      "Deletes the album's uploads too (each as DELETE /api/{id} would), at most " +
      `${UPLOADS_DELETED_PER_REQUEST} a request; until none is left the album stays and the answer says ` +
      "how many are. Without it the uploads stay.",
  }),
});

/* Responses */

const url = z.string().url();
const timestamp = z.string().meta({ description: "ISO 8601 with a UTC offset, e.g. 2026-01-31T12:00:00+00:00." });

const uploadSchema = z
  .object({
    id: z.string(),
    type: z.enum(["image", "video"]),
    path: url.meta({ description: "URL of the stored object; changes when the file is converted." }),
    src: url.meta({
      description:
        "Permanent direct URL; always serves the current file. `src?w=W` (W one of " +
        `${VARIANT_WIDTHS.join(", ")}) serves an image at most W px wide, never wider than the image, ` +
        "as AVIF to clients whose Accept names image/avif, else WebP if it names image/webp, else in the " +
        "file's own format (`format=auto`, the default); `format=avif|webp|original` fixes it. A video's " +
        "`src?w=W` is its first frame. Variants are made on their first request and stored; answers carry " +
        "`Vary: Accept` (with format=auto), ETag, Range and src's Cache-Control. An animated GIF, PNG or WebP " +
        "is served whole. Any other w, a repeated option, or format without w is a 400; a password-protected " +
        "or view-limited upload's variants are a 403; a file the media tools cannot read is a 422, remembered " +
        "until the file is replaced; no media service right now, a variant not made within 60 s (for 10 " +
        "minutes), or as many variants of the upload (2) or on the service (3) being made already, is a 503 " +
        "with Retry-After. Only an actual encode counts toward the client's 60 makings a minute.",
    }),
    direct: url.meta({ description: "The upload's page." }),
    thumb: url.nullable().meta({ description: "WebP thumbnail 280 px wide; null until made." }),
    width: z.number().int().nullable(),
    height: z.number().int().nullable(),
    size: z.number().int(),
    locked: z.boolean(),
    visibility: visibilityField,
    title: z.string().nullable(),
    description: z.string().nullable(),
    expires_at: timestamp.nullable(),
    created_at: timestamp,
  })
  .meta({ id: "Upload" });

const uploadResultSchema = uploadSchema
  .omit({ created_at: true })
  .extend({
    duplicate: z.boolean(),
    delete_url: url.optional().meta({ description: "Deletes the upload without an API key. New uploads only." }),
  })
  .meta({ id: "UploadResult" });

export const uploadResponseSchema = z
  .object({ type: z.literal("success"), msg: z.literal("success"), data: uploadResultSchema })
  .meta({ id: "UploadResponse" });

export const uploadItemResponseSchema = z
  .object({ type: z.literal("success"), msg: z.literal("success"), data: uploadSchema })
  .meta({ id: "UploadItemResponse" });

export const listResponseSchema = z
  .object({
    type: z.literal("success"),
    data: z.array(uploadSchema),
    meta: z.object({ current_page: z.number().int(), last_page: z.number().int(), total: z.number().int() }),
  })
  .meta({ id: "ListResponse" });

export const deleteResponseSchema = z
  .object({ type: z.literal("success"), msg: z.literal("Deleted.") })
  .meta({ id: "DeleteResponse" });

export const chunkResponseSchema = z
  .object({ type: z.literal("success"), chunk_size: z.literal(PIECE_BYTES) })
  .meta({ id: "ChunkResponse" });

/** GET /api/usage (extension): the account's usage against its quotas; null allowed is no limit. */
export const usageResponseSchema = z
  .object({
    type: z.literal("success"),
    data: z.object({
      bytes_used: z
        .number()
        .int()
        .describe("Bytes of the account's stored files (thumbnails and variants not counted)."),
      bytes_allowed: z.number().int().nullable().describe("The account's byte quota; null: no limit."),
      uploads_used: z.number().int().describe("Uploads whose files are stored."),
      uploads_allowed: z.number().int().nullable().describe("The account's upload quota; null: no limit."),
    }),
  })
  .meta({ id: "UsageResponse" });

const albumSchema = z
  .object({
    id: z.string(),
    title: z.string().nullable(),
    description: z.string().nullable(),
    visibility: visibilityField,
    locked: z.boolean().meta({ description: "Whether its page asks for a password." }),
    accepts_uploads: z
      .boolean()
      .meta({ description: "Whether the upload-only key may upload into it (the full key always may)." }),
    url: url.meta({ description: "The album's page." }),
    cover: url.nullable().meta({ description: "The cover upload's thumbnail; null without a cover or thumbnail." }),
    cover_id: z.string().nullable(),
    upload_count: z.number().int().meta({ description: "Its uploads, expired ones left out." }),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: "Album" });

export const albumResponseSchema = z
  .object({ type: z.literal("success"), msg: z.literal("success"), data: albumSchema })
  .meta({ id: "AlbumResponse" });

export const albumListResponseSchema = listResponseSchema
  .extend({ data: z.array(albumSchema) })
  .meta({ id: "AlbumListResponse" });

export const albumDeleteResponseSchema = z
  .object({
    type: z.literal("success"),
    msg: z.enum(["Deleted.", "Uploads left."]),
    data: z.object({
      album_deleted: z.boolean(),
      uploads_deleted: z.number().int(),
      uploads_left: z.number().int().meta({ description: "Uploads still to delete; the album stays until 0." }),
    }),
  })
  .meta({ id: "AlbumDeleteResponse" });

export const errorResponseSchema = z.object({ type: z.literal("error"), errors: z.string() }).meta({ id: "Error" });
