import { z } from "zod";
import { EXPIRES_IN_MAX, EXPIRES_IN_MIN } from "../../model/spec-limits";
import { VISIBILITIES } from "../../model/visibility";
import { isXmlText } from "../../model/xml-text";

/**
 * The fields requests are made of, as every way in reads them: each written once, so that an
 * upload's title, say, is held to the same rule whether it came as a form, a tool's argument or a
 * tus upload's metadata.
 */

const TRUE = ["1", "true", "yes", "on"];
const FALSE = ["0", "false", "no", "off"];

/** Form booleans: 1/0, true/false, yes/no, on/off (any case), or a JSON boolean. */
export const booleanField = z
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
export const clearableText = (field: string, max: number) =>
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

export const visibilityField = z.enum(VISIBILITIES, {
  message: `must be one of ${VISIBILITIES.join(", ")}`,
});

export const wholeNumber = (min: number, max: number) =>
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
export const passwordField = z.string().max(128, { message: "must be at most 128 characters" }).meta({
  description: "Extension: protects the upload with this password (locked). On PATCH an empty value removes it.",
});

const MAX_VIEWS_LIMIT = 1_000_000;
/** Extension: the file is served this many times, then no more. */
export const maxViewsField = wholeNumber(1, MAX_VIEWS_LIMIT).meta({
  description:
    "Extension: the file is served this many times (downloads from the start), then no more. " +
    "On PATCH an empty value removes the limit; setting it starts the count afresh.",
});

export const expiresInField = wholeNumber(EXPIRES_IN_MIN, EXPIRES_IN_MAX);

/** An album's or upload's id as a request names it: 10 base62 characters (anything else names none). */
export const ID_PATTERN = /^[0-9A-Za-z]{10}$/;
export const albumIdField = z
  .string()
  .trim()
  .regex(ID_PATTERN, { message: "must be an album id (10 letters and digits)" });
