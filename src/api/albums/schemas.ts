import { z } from "zod";
import { UPLOADS_DELETED_PER_REQUEST } from "../../uploads/albums/albums";
import { booleanField, ID_PATTERN } from "../../uploads/schemas/fields";
import { albumCreateBody, albumPasswordField } from "../../uploads/schemas/requests";
import { albumSchema } from "../../uploads/schemas/resources";
import { listResponseSchema } from "../schemas";

/** The albums' requests and answers (extension), beyond the bodies every face shares (src/uploads/schemas). */

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

/** POST, GET and PATCH of albums, and their changes of uploads: the album as it now is. */
export const albumResponseSchema = z
  .object({ type: z.literal("success"), msg: z.literal("success"), data: albumSchema })
  .meta({ id: "AlbumResponse" });

/** GET /api/albums: one page of albums. */
export const albumListResponseSchema = listResponseSchema
  .extend({ data: z.array(albumSchema) })
  .meta({ id: "AlbumListResponse" });

/** DELETE /api/albums/{id}: the album is gone, or uploads of it are still to delete. */
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
