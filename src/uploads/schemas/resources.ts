import { z } from "zod";
import { PROCESSING_STATES } from "../../model/schema";
import { VARIANT_WIDTHS } from "../variants/options";
import { FITS, MAX_TRANSFORM_PIXELS, MAX_TRANSFORM_SIDE } from "../../../container/src/transform-contract";
import { DEFAULT_FIT, TRANSFORM_FORMATS, UNSIGNED, URL_GRAVITIES } from "../transforms/options";
import { visibilityField } from "./fields";

/**
 * The resources the domain answers with (presentUpload, presentUploadResult, presentAlbum), as
 * every face hands them on: the API in its envelopes, MCP as its tools' structured content. The
 * OpenAPI document and MCP's output schemas are built from these.
 */

const url = z.string().url();
export const timestamp = z
  .string()
  .meta({ description: "ISO 8601 with a UTC offset, e.g. 2026-01-31T12:00:00+00:00." });

const processingSchema = z
  .object({
    state: z.enum(PROCESSING_STATES).meta({
      description:
        "queued: its work waits (a retry too); running: the media service works on it; ready: every " +
        "planned output (thumbnail, conversion) is stored; failed: the work gave up, `error` says why.",
    }),
    percent: z
      .number()
      .int()
      .min(0)
      .max(100)
      .nullable()
      .meta({ description: "0 queued, 100 ready, null failed; while running, a video's conversion figure or null." }),
    error: z
      .string()
      .nullable()
      .meta({
        description:
          "Why the work failed, in words to act on; while queued, why it waits when that is the owner's to " +
          "know (a video's streaming versions waiting for the next UTC day's minutes); else null.",
      }),
    updated_at: timestamp,
  })
  .meta({ id: "Processing", description: "Where the work after the upload stands (an extension of the spec)." });

/** What `src` takes beyond `w` (src/uploads/transforms/options.ts), with each bound and error. */
const TRANSFORMS_TEXT =
  "Transforms (an image's): `width`/`w` and `height`/`h` (unsigned: " +
  `${UNSIGNED.sides.join(", ")}; signed: 1-${MAX_TRANSFORM_SIDE}), \`fit\` (${FITS.join(", ")}; default ` +
  `${DEFAULT_FIT}), \`gravity\`/\`g\` (${URL_GRAVITIES.join(", ")} or a point XxY, fractions: unsigned on the 0.1 ` +
  "grid, signed to 3 places; auto is the upload's focal point, else what matters), `quality`/`q` (unsigned: " +
  `${UNSIGNED.qualities.join(", ")}; signed: 1-100), \`dpr\` (unsigned: ${UNSIGNED.dprs.join(", ")}; signed: ` +
  `1-3; multiplies the sizes), \`blur\` (unsigned: ${UNSIGNED.blurs.join(", ")}; signed: 1-250), ` +
  `\`format\`/\`f\` (${TRANSFORM_FORMATS.join(", ")}), \`background\` (pad's fill: ` +
  `${UNSIGNED.backgrounds.join(", ")}; signed also rrggbb or rrggbbaa). Sizes times dpr stay within ` +
  `${MAX_TRANSFORM_SIDE} px a side and ${MAX_TRANSFORM_PIXELS} pixels. A value off the unsigned bounds is a 400 ` +
  "naming the allowed ones; a signed URL ends with `s`, the unpadded base64url HMAC-SHA256 under the owner's " +
  "signing secret of the path, `?` and the query up to `&s=`: a wrong, altered, another account's or " +
  "pre-rotation signature is a 403. A video takes no transform (400). Each upload keeps at most 200 transform " +
  "copies and 64 MiB of them; the least recently served go first.";

export const uploadSchema = z
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
        "with Retry-After. Only an actual encode counts toward the client's 60 makings a minute. " +
        TRANSFORMS_TEXT,
    }),
    direct: url.meta({ description: "The upload's page." }),
    thumb: url.nullable().meta({ description: "WebP thumbnail 280 px wide; null until made." }),
    placeholder: z
      .string()
      .nullable()
      .meta({
        description:
          "A ThumbHash of the thumbnail (base64, about 25 bytes; https://evanw.github.io/thumbhash/): a blurred " +
          "sketch to paint where the image will be until it loads (thumbHashToDataURL of npm's thumbhash). Null " +
          "until made (with the thumbnail, or on the next read of an older upload) and when it cannot be.",
      }),
    color: z
      .string()
      .regex(/^#[0-9a-f]{6}$/)
      .nullable()
      .meta({ description: "The thumbnail's average colour, `#rrggbb`; null whenever `placeholder` is." }),
    width: z.number().int().nullable(),
    height: z.number().int().nullable(),
    size: z.number().int(),
    locked: z.boolean(),
    visibility: visibilityField,
    title: z.string().nullable(),
    description: z.string().nullable(),
    expires_at: timestamp.nullable(),
    created_at: timestamp,
    processing: processingSchema,
    focal: z
      .object({ x: z.number().min(0).max(1), y: z.number().min(0).max(1) })
      .nullable()
      .meta({
        description:
          "Extension: the focal point `gravity=auto` crops around, as fractions of the image's width and height " +
          "from its top left; null for none (then what matters in the image is found).",
      }),
    duration: z
      .number()
      .nullable()
      .meta({ description: "A video's length in seconds once its media job has read it; null for images and before." }),
    hls: url.nullable().meta({
      description:
        "A video's HLS master playlist (`/h/{id}/master.m3u8`, stable across replacements): its renditions " +
        "(`rungs`) as CMAF segments. Null for images and until the ladder is stored (`processing` ready). A " +
        "locked, view-limited or private upload's is signed for its owner (valid 10 minutes; every URI in its " +
        "playlists carries its own signature) and refused unsigned.",
    }),
    storyboard: url.nullable().meta({
      description:
        "A WebVTT file whose cues (`storyboard.webp#xywh=x,y,w,h`) point into one sprite of preview frames, " +
        "for seek-bar previews; signed as `hls` is. Null without a ladder, and for audio only.",
    }),
    rungs: z
      .array(
        z.object({
          name: z.string().meta({ description: '"1080p" ... "240p" by the frame\'s short side, or "audio".' }),
          width: z.number().int().nullable(),
          height: z.number().int().nullable(),
          bandwidth: z.number().int().meta({ description: "Peak bits a second (BANDWIDTH)." }),
          average_bandwidth: z.number().int().meta({ description: "Average bits a second (AVERAGE-BANDWIDTH)." }),
          codecs: z.string().meta({ description: 'RFC 6381, e.g. "avc1.64001f,mp4a.40.2".' }),
        }),
      )
      .nullable()
      .meta({ description: "The ladder's renditions, highest first; null whenever `hls` is." }),
  })
  .meta({ id: "Upload" });

/** A new upload, or the existing one it duplicates. */
export const uploadResultSchema = uploadSchema
  .omit({ created_at: true })
  .extend({
    duplicate: z.boolean(),
    delete_url: url.optional().meta({ description: "Deletes the upload without an API key. New uploads only." }),
  })
  .meta({ id: "UploadResult" });

/** Where a list page (one slice of a list) stands among the others. */
export const listPageMetaSchema = z.object({
  current_page: z.number().int(),
  last_page: z.number().int(),
  total: z.number().int(),
  next_cursor: z
    .string()
    .nullable()
    .meta({
      description:
        "Extension: pass as `cursor` for the next page, read without reading the pages before it; " +
        "null on the last page.",
    }),
});

export const albumSchema = z
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

/** DELETE /api/{id}, and the delete link's answer (src/site/pages.ts), which is the same. */
export const deleteResponseSchema = z
  .object({ type: z.literal("success"), msg: z.literal("Deleted.") })
  .meta({ id: "DeleteResponse" });

export const DELETED: z.infer<typeof deleteResponseSchema> = { type: "success", msg: "Deleted." };
