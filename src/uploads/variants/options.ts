import type { VariantEncoding } from "../../../container/src/contract";
import { badRequest } from "../../errors";

/**
 * The widths `src?w=` takes. A fixed ladder, not any width: each upload has at most
 * VARIANT_WIDTHS x 3 encodings of variants to make and store, so no sequence of requests can keep
 * the encoders busy or fill storage, and every client asking for a width shares one copy (and
 * one cached URL). 1200 is the width link previews ask for (og:image).
 */
export const VARIANT_WIDTHS = [160, 320, 480, 640, 960, 1200, 1600, 1920, 2560] as const;

/**
 * The ladder widths a display of an image `width` px wide can use: every one narrower than it,
 * then the first at or above it, which serves the image at its own width. Empty for a video or
 * an image of unknown width.
 */
export function widthsFor(width: number | null): number[] {
  if (!width) return [];
  const below = VARIANT_WIDTHS.filter((w) => w < width);
  const top = VARIANT_WIDTHS.find((w) => w >= width);
  return top === undefined ? below : [...below, top];
}

/** `format=`: chosen by Accept (`auto`, the default), or one encoding whatever the client says. */
const FORMATS = ["auto", "avif", "webp", "original"] as const;
export type VariantFormat = (typeof FORMATS)[number];

export interface VariantOptions {
  width: number;
  format: VariantFormat;
  /** A video's poster at this time (ms, a multiple of 100) rather than at its first frame. */
  at?: number;
}

/** The width a poster at a time has when `w` is not given: a player's poster. */
export const DEFAULT_POSTER_WIDTH = 640;
/** Posters of one file at different times, at most (any width and encoding): posters.ts. */
export const MAX_POSTER_TIMES = 100;
const MAX_POSTER_SECOND = 24 * 3600;

const widthList = () => VARIANT_WIDTHS.join(", ");

function single(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  if (values.length > 1) throw badRequest(`${name} may be given once.`);
  return values[0];
}

/**
 * The variant a `src` request asks for, or null when it asks for none (then `src` is served as
 * it always was). Any other query parameter is ignored, as on plain `src`.
 */
export function variantOptions(query: URLSearchParams): VariantOptions | null {
  const w = single(query, "w");
  const format = single(query, "format");
  if (w === undefined && format === undefined) return null;
  if (w === undefined) throw badRequest(`format needs w, one of ${widthList()}.`);
  const width = Number(w);
  if (!/^[1-9]\d{0,4}$/.test(w) || !(VARIANT_WIDTHS as readonly number[]).includes(width)) {
    throw badRequest(`w must be one of ${widthList()}.`);
  }
  if (format !== undefined && !(FORMATS as readonly string[]).includes(format)) {
    throw badRequest(`format must be one of ${FORMATS.join(", ")}.`);
  }
  return { width, format: (format ?? "auto") as VariantFormat };
}

/**
 * The poster a thumb request asks for (`?t=12.5&w=640`), or null without `t` (then the thumbnail
 * is served as it always was, any other query ignored). `t` is rounded to 0.1 s; `w`, any width
 * from 1, is snapped up to the ladder (to its widest past it), so that every client near a width
 * shares one copy.
 */
export function posterOptions(query: URLSearchParams): VariantOptions | null {
  const t = single(query, "t");
  if (t === undefined) return null;
  if (!/^\d{1,5}(\.\d{1,6})?$/.test(t) || Number(t) > MAX_POSTER_SECOND) {
    throw badRequest(`t must be a second from 0 to ${MAX_POSTER_SECOND}, such as 12.5.`);
  }
  const w = single(query, "w");
  if (w !== undefined && !/^[1-9]\d{0,4}$/.test(w)) throw badRequest("w must be a width in pixels, from 1.");
  const format = single(query, "format");
  if (format !== undefined && !(FORMATS as readonly string[]).includes(format)) {
    throw badRequest(`format must be one of ${FORMATS.join(", ")}.`);
  }
  const asked = w === undefined ? DEFAULT_POSTER_WIDTH : Number(w);
  const width = VARIANT_WIDTHS.find((rung) => rung >= asked) ?? 2560;
  return { width, format: (format ?? "auto") as VariantFormat, at: Math.round(Number(t) * 10) * 100 };
}

/**
 * Whether an Accept header names `type` with a quality above zero. Wildcards do not count: a
 * client that lists neither AVIF nor WebP by name (curl, many crawlers) may not decode them.
 */
export function accepts(accept: string | undefined, type: string): boolean {
  if (!accept || accept.length > 4096) return false;
  return accept.split(",").some((range) => {
    const [name, ...params] = range.split(";").map((part) => part.trim().toLowerCase());
    if (name !== type) return false;
    const q = params.find((param) => param.startsWith("q="));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/**
 * The encoding a variant is served in. `auto`: AVIF to clients that accept it, else WebP to those
 * that accept it, else `original`. `original` is the stored file's own format where that can be
 * written, PNG otherwise (lossless, and every client decodes it).
 */
export function chooseEncoding(
  format: VariantFormat,
  accept: string | undefined,
  original: VariantEncoding | null,
): VariantEncoding {
  if (format === "avif" || format === "webp") return format;
  if (format === "auto") {
    if (accepts(accept, "image/avif")) return "avif";
    if (accepts(accept, "image/webp")) return "webp";
  }
  return original ?? "png";
}
