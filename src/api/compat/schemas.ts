import { z } from "zod";

/**
 * The answers of the compatible endpoints, in the shapes their tools parse. They type the bodies
 * the handlers write and are the OpenAPI document's description of them, as the schemas beside
 * the API's own routes are for theirs. Only fields this service can fill are here (docs/api.md says how).
 */

const url = z.string().url();
const dateTime = z.string().meta({ description: "UTC, as `YYYY-MM-DD hh:mm:ss`." });

const cheveretoImage = z.object({
  id_encoded: z.string().meta({ description: "The upload's id." }),
  name: z.string().meta({ description: "The stored file's name without its extension." }),
  extension: z.string(),
  filename: z.string(),
  original_filename: z.string(),
  mime: z.string(),
  size: z.number().int().meta({ description: "Bytes, as stored." }),
  width: z.number().int().nullable(),
  height: z.number().int().nullable(),
  date: dateTime,
  date_gmt: dateTime,
  expiration_date_gmt: dateTime.nullable(),
  title: z.string().nullable(),
  description: z.string().nullable(),
  url: url.meta({ description: "`src`: the permanent direct URL." }),
  url_viewer: url.meta({ description: "`direct`: the upload's page." }),
  display_url: url,
  image: z.object({
    filename: z.string(),
    name: z.string(),
    mime: z.string(),
    extension: z.string(),
    url,
    size: z.number(),
  }),
  thumb: z.object({ url: url.meta({ description: "`thumb`, or `src` until the thumbnail is made." }) }),
  medium: z.object({ url }),
  delete_url: url.optional().meta({ description: "New uploads only." }),
});

export const cheveretoUploadSchema = z
  .object({
    status_code: z.literal(200),
    success: z.object({ message: z.string(), code: z.literal(200) }),
    image: cheveretoImage,
    status_txt: z.literal("OK"),
  })
  .meta({ id: "CheveretoUpload" });

/** Chevereto's error fields beside the service's envelope: one body, read by either. */
export const cheveretoErrorSchema = z
  .object({
    status_code: z.number().int(),
    error: z.object({ message: z.string(), code: z.number().int() }),
    status_txt: z.string(),
    type: z.literal("error"),
    errors: z.string(),
  })
  .meta({ id: "CheveretoError" });

export const lskyUploadSchema = z
  .object({
    status: z.literal(true),
    message: z.string(),
    data: z.object({
      key: z.string().meta({ description: "The upload's id." }),
      name: z.string().meta({ description: "The stored file's name." }),
      pathname: z.string().meta({ description: "Its path under the service's origin (`path`)." }),
      origin_name: z.string(),
      size: z.number().meta({ description: "Kilobytes (KiB), two decimals." }),
      mimetype: z.string(),
      extension: z.string(),
      md5: z.string().meta({ description: "Of the file as received." }),
      sha1: z.string().meta({ description: "Of the file as received." }),
      links: z.object({
        url: url.meta({ description: "`src`: the permanent direct URL." }),
        html: z.string(),
        bbcode: z.string(),
        markdown: z.string(),
        markdown_with_link: z.string(),
        thumbnail_url: url.meta({ description: "`thumb`, or `src` until the thumbnail is made." }),
        delete_url: url.optional().meta({ description: "New uploads only." }),
      }),
    }),
  })
  .meta({ id: "LskyUpload" });

/** Lsky Pro's error fields beside the service's envelope. */
export const lskyErrorSchema = z
  .object({
    status: z.literal(false),
    message: z.string(),
    data: z.object({}),
    type: z.literal("error"),
    errors: z.string(),
  })
  .meta({ id: "LskyError" });
