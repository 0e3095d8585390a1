import { z } from "zod";
import { albumSchema, listPageMetaSchema, uploadResultSchema, uploadSchema } from "../uploads/schemas/resources";

/**
 * What each tool returns as `structuredContent`, declared as its `outputSchema`: the resources the
 * API answers with too (src/uploads/schemas/resources.ts), so an agent reads the same fields a
 * client of the API does. MCP wants an object at the root of an output schema, so each is rebuilt
 * from its shape without the component name the OpenAPI document gives it (a named schema becomes
 * a `$ref` at the root).
 */

/** An upload as GET /api/{id} answers it. */
export const uploadOutput = z.object(uploadSchema.shape);

/** A new upload (or the existing one it duplicates), as POST /api answers it. */
export const uploadResultOutput = z.object(uploadResultSchema.shape);

/** One page of the account's uploads, as GET /api answers it. */
export const listOutput = z.object({
  data: z.array(uploadOutput),
  meta: listPageMetaSchema,
});

export const deletedOutput = z.object({ id: z.string(), deleted: z.literal(true) });

export const variantsOutput = z.object({
  id: z.string(),
  width: z.number().int().meta({ description: "The image's own width in pixels." }),
  height: z.number().int().nullable(),
  variants: z.array(
    z.object({
      width: z.number().int().meta({ description: "At most this many pixels wide." }),
      url: z
        .string()
        .meta({ description: "src?w=W: AVIF or WebP by the client's Accept, else the file's own format." }),
    }),
  ),
  srcset: z.string().meta({ description: "The variants as an HTML srcset attribute's value." }),
});

/** An album as GET /api/albums/{id} answers it. */
export const albumOutput = z.object(albumSchema.shape);

/** One page of the account's albums, as GET /api/albums answers it. */
export const albumListOutput = z.object({
  data: z.array(albumOutput),
  meta: listPageMetaSchema,
});
