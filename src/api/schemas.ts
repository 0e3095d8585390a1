import { z } from "zod";
import { wholeNumber } from "../uploads/schemas/fields";
import { listPageMetaSchema, uploadSchema } from "../uploads/schemas/resources";

/**
 * The schemas more than one of the API's resources use: the list's query, the answers that carry
 * uploads, and the error envelope. Each resource's own are in its folder (uploads/, pieces/,
 * albums/), around the resources every face shares (src/uploads/schemas). They validate requests
 * and are the source of the OpenAPI document (openapi/document.ts), so the two cannot drift apart.
 */

/**
 * A list's query: the spec's `page`, or (extension) the `cursor` a list answer's next_cursor gave,
 * which reads only its page however deep it is. Both at once is a 422: neither may quietly win.
 */
export const listQuery = z
  .object({
    page: wholeNumber(1, Number.MAX_SAFE_INTEGER)
      .optional()
      .meta({
        description:
          "Page number, from 1 (default 1). A page past last_page returns an empty data array. " +
          "A deep page reads every row before it; meta.next_cursor reads only its own.",
      }),
    cursor: z
      .string()
      .optional()
      .meta({
        description:
          "Extension: the meta.next_cursor of the previous page, to read the next one however deep it is. " +
          "Not with page.",
      }),
  })
  .refine((query) => query.page === undefined || query.cursor === undefined, {
    message: "page and cursor: give one or the other, not both.",
  });

/** Which page a list query asks for. */
export const pageAsked = (query: z.output<typeof listQuery>) =>
  query.cursor === undefined ? { page: query.page ?? 1 } : { cursor: query.cursor };

/** GET, PATCH and replace of /api/{id}, and a finished tus upload: the upload as it now is. */
export const uploadItemResponseSchema = z
  .object({ type: z.literal("success"), msg: z.literal("success"), data: uploadSchema })
  .meta({ id: "UploadItemResponse" });

/** GET /api and an album's uploads: one page of uploads. */
export const listResponseSchema = z
  .object({
    type: z.literal("success"),
    data: z.array(uploadSchema),
    meta: listPageMetaSchema,
  })
  .meta({ id: "ListResponse" });

export const errorResponseSchema = z.object({ type: z.literal("error"), errors: z.string() }).meta({ id: "Error" });
