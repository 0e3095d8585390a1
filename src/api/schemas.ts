import { z } from "zod";
import { PIECE_BYTES } from "../model/spec-limits";
import { MAX_PIECES, SESSION_ID_PATTERN } from "../uploads/intake/piece-sessions";
import { UPLOADS_DELETED_PER_REQUEST } from "../uploads/albums/albums";
import { booleanField, ID_PATTERN, wholeNumber } from "../uploads/schemas/fields";
import { albumCreateBody, albumPasswordField } from "../uploads/schemas/requests";
import { albumSchema, listPageMetaSchema, uploadResultSchema, uploadSchema } from "../uploads/schemas/resources";

/**
 * Request and response schemas of the API alone, and its envelopes around the resources every
 * face shares (src/uploads/schemas). They validate requests and are the source of the OpenAPI
 * document (src/api/openapi.ts), so the two cannot drift apart.
 */

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

/** PATCH /api/albums/{id}: only the fields sent change. */
export const albumChangeBody = albumCreateBody.extend({
  password: albumPasswordField
    .nullable()
    .transform((p) => p || null)
    .optional(),
  cover: coverField.optional(),
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
    meta: listPageMetaSchema,
  })
  .meta({ id: "ListResponse" });

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
