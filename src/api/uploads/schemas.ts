import { z } from "zod";
import { uploadResultSchema } from "../../uploads/schemas/resources";

/** The answers of the uploads' own operations; the ones other resources share are in ../schemas.ts. */

/** POST /api: the new upload, or the existing one it duplicates. */
export const uploadResponseSchema = z
  .object({ type: z.literal("success"), msg: z.literal("success"), data: uploadResultSchema })
  .meta({ id: "UploadResponse" });

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
