import { z } from "zod";
import { VISIBILITIES } from "../model/visibility";

/**
 * The pieces the tools' input schemas are made of. They restate what agents read in tools/list;
 * the arguments are then checked by the same schemas as the API's requests (src/uploads/schemas).
 */

/** A listing tool's input: which page of 50. */
export const pageInput = z.object({ page: z.number().int().min(1).optional().describe("Page number, from 1.") });

export const id = z.string().min(1).max(64).describe("The upload's id, as an upload or list answer gives it.");
export const url = z.string().min(1).max(2048).describe("A public http(s) link to an image or video (up to 200 MB).");

/** The options of a new upload, as the API takes them (POST /api); checked by the API's own rules. */
export const uploadOptions = {
  title: z.string().optional().describe("Title, at most 100 characters."),
  description: z.string().optional().describe("Description, at most 1000 characters."),
  visibility: z.enum(VISIBILITIES).optional().describe("public (listed in the gallery), unlisted (default), private."),
  expires_in: z.number().int().optional().describe("Seconds until the upload is deleted (60 to 31536000)."),
  password: z.string().optional().describe("Protects the upload: its files only through signed links."),
  max_views: z.number().int().optional().describe("The file is served this many times, then no more."),
  allow_duplicate: z.boolean().optional().describe("Store the file again even if the account has it already."),
  keep_original: z.boolean().optional().describe("Keep a large JPEG or PNG as it is instead of converting to WebP."),
  album: z
    .string()
    .max(64)
    .optional()
    .describe(
      "The id of one of the account's albums: the upload is added at its end. The upload-only key may name only " +
        "an album that accepts uploads.",
    ),
};

/** The tools' arguments as the API's form fields, so that the API's one schema checks them. */
export const asFields = (args: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(Object.entries(args).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)]])));
