import { z } from "zod";
import { roundFraction } from "../../../container/src/transform-contract";
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

/** A fraction of a side, as a focal point is written: 0 to 1, at most 3 places kept (roundFraction). */
const FRACTION = /^\s*(0(\.\d+)?|1(\.0+)?|\.\d+)\s*$/;
const FOCAL_WORDS = "must be x,y with x and y fractions from 0 to 1 (e.g. 0.3,0.6), or none";

/** `x,y` as a point, or null for `none`; undefined when it is neither. */
function pointOf(text: string): { x: number; y: number } | null | undefined {
  if (/^\s*(none)?\s*$/i.test(text)) return null;
  const [x, y, ...rest] = text.split(",");
  if (rest.length || x === undefined || y === undefined || !FRACTION.test(x) || !FRACTION.test(y)) return undefined;
  return { x: roundFraction(Number(x)), y: roundFraction(Number(y)) };
}

/**
 * Extension: the upload's focal point, what `gravity=auto` crops around: `x,y` as fractions of
 * the upright image's width and height (0,0 its top left), kept to 3 places; `none`, an empty
 * value or null removes it. A JSON body may send the `{x, y}` answers carry, too.
 */
export const focalField = z
  .union([
    z.string().max(64),
    z.null(),
    z.object({ x: z.number().min(0).max(1), y: z.number().min(0).max(1) }, { message: FOCAL_WORDS }),
  ])
  .transform((value, context) => {
    if (value === null) return null;
    if (typeof value !== "string") return { x: roundFraction(value.x), y: roundFraction(value.y) };
    const point = pointOf(value);
    if (point === undefined) context.addIssue({ code: "custom", message: FOCAL_WORDS });
    return point ?? null;
  })
  .meta({
    description:
      "Extension: the focal point `gravity=auto` crops around, as `x,y` fractions of the image's width and " +
      "height from its top left (e.g. `0.3,0.6`, kept to 3 places); `none` or an empty value removes it. " +
      "Images only (a video's is a 422). Changing it removes the copies cropped around the old one.",
  });
