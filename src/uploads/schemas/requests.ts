import { z } from "zod";
import { parseOrThrow, unprocessable } from "../../errors";
import { DESCRIPTION_MAX, EXPIRES_IN_MAX, EXPIRES_IN_MIN, TITLE_MAX } from "../../model/spec-limits";
import { MAX_ALBUM_IDS_PER_REQUEST } from "../albums/albums";
import {
  booleanField,
  clearableText,
  expiresInField,
  focalField,
  maxViewsField,
  passwordField,
  visibilityField,
} from "./fields";
import { OPTION_FIELDS, type OptionField, optionalFields } from "./option-fields";

/**
 * What more than one way in asks of the domain, checked by one schema each: the API's forms and
 * JSON bodies, MCP's tools, tus metadata and the compatible endpoints all read their requests into
 * these. They are also the source of the OpenAPI document (src/api/openapi/).
 */

/**
 * Text fields of POST /api (the file itself is the `uploads` part) with these option fields: where
 * the file comes from, then the options.
 */
export const uploadFieldsOf = <Options extends Record<string, OptionField>>(options: Options) =>
  z.object({
    url: z.string().optional().meta({ description: "Public http(s) link to an image or video." }),
    upload_id: z.string().optional().meta({ description: "Id of a file sent in pieces to /api/chunk." }),
    filename: z.string().max(255).optional().meta({ description: "Original file name, with upload_id." }),
    ...optionalFields(options),
  });

/** An upload's text fields, whichever way in they came through: with the one list of option fields. */
export const uploadFields = uploadFieldsOf(OPTION_FIELDS);

/** An upload's text fields, checked; throws (422) on bad ones. */
export function parseUploadFields(fields: Record<string, string>) {
  // An empty optional field means "not given", except title and description, where it means "none".
  const given = Object.fromEntries(
    Object.entries(fields).filter(([k, v]) => v.trim() !== "" || k === "title" || k === "description"),
  );
  return parseOrThrow(uploadFields, given);
}

export type UploadFields = ReturnType<typeof parseUploadFields>;

/** An expiry the schema let through may still be over the Worker's configured ceiling: a 422. */
export function assertExpiryAllowed(expiresIn: number | null | undefined, expiresInMax: number) {
  if (expiresIn != null && expiresIn > expiresInMax) throw unprocessable(`expires_in: must be at most ${expiresInMax}`);
}

/** PATCH /api/{id}: only the fields sent change. */
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
  focal: focalField.optional(),
});

export const albumPasswordField = passwordField.meta({
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
