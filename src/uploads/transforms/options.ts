import {
  FITS,
  type Fit,
  type GravityPoint,
  MAX_TRANSFORM_SIDE,
  parseGravity,
} from "../../../container/src/transform-contract";
import { badRequest } from "../../errors";
import { VARIANT_WIDTHS, type VariantOptions, variantOptions } from "../variants/options";
import { SIGNATURE_PARAM } from "./signature";

/** `format=` of a transform: a plain variant's, and JPEG or PNG whatever the file is. */
export const TRANSFORM_FORMATS = ["auto", "avif", "webp", "jpeg", "png", "original"] as const;
export type TransformFormat = (typeof TRANSFORM_FORMATS)[number];

/** The formats a plain variant (`w` alone) takes. */
const PLAIN_FORMATS = ["auto", "avif", "webp", "original"] as const;

/** The gravities a URL may name: `auto` finds what matters (or the focal point), or a side. */
export const URL_GRAVITIES = ["auto", "center", "top", "bottom", "left", "right"] as const;
export type UrlGravity = (typeof URL_GRAVITIES)[number] | GravityPoint;

/**
 * A transform as the URL asks for it, before the upload resolves it (resolve.ts): sizes before
 * the DPR, gravity `auto` not yet a point or `attention`, the background as `rrggbbaa`.
 */
export interface TransformRequest {
  width?: number;
  height?: number;
  fit: Fit;
  gravity: UrlGravity;
  quality?: number;
  dpr: number;
  blur?: number;
  background: string;
  format: TransformFormat;
  /** Carries `s`: served only once the signature holds under the owner's secret (the wide bounds). */
  signed: boolean;
}

/**
 * What an unsigned URL may ask for: a few hundred copies of an upload at most, each shared by
 * every client asking. A signed URL may ask anything within the media service's bounds.
 */
export const UNSIGNED = {
  sides: VARIANT_WIDTHS as readonly number[],
  qualities: [40, 60, 75, 80, 90],
  dprs: [1, 1.5, 2, 2.5, 3],
  blurs: [5, 10, 20, 50],
  backgrounds: ["white", "black", "transparent"],
} as const;

/** Cloudflare Images' default fit (its hosted variants' schema and references: `scale-down`). */
export const DEFAULT_FIT: Fit = "scale-down";
export const DEFAULT_BACKGROUND = "ffffffff";
const NAMED_BACKGROUNDS: Record<string, string> = { white: "ffffffff", black: "000000ff", transparent: "ffffff00" };

/** Each option by its names, Cloudflare Images' long one first. */
const NAMES = {
  width: ["width", "w"],
  height: ["height", "h"],
  fit: ["fit"],
  gravity: ["gravity", "g"],
  quality: ["quality", "q"],
  dpr: ["dpr"],
  blur: ["blur"],
  format: ["format", "f"],
  background: ["background"],
} as const;
type Option = keyof typeof NAMES;

const SIGNED_HINT = "; a signed URL can ask for any";

/** An option's one value, under either of its names; undefined when not given. */
function single(query: URLSearchParams, option: Option): string | undefined {
  const names: readonly string[] = NAMES[option];
  const values = names.flatMap((name) => query.getAll(name));
  if (values.length > 1) throw badRequest(`${option} may be given once (as ${names.join(" or ")}).`);
  return values[0];
}

/** What a `src` request asks for: the file itself (null), a plain variant (`w` alone), or a transform. */
export type SrcOptions = null | { variant: VariantOptions } | { transform: TransformRequest };

/**
 * A `src` query read. Only `w` and `format` (a plain variant's formats) keep today's variant, with
 * its keys and answers; any other option, an alias or `s` make a transform. Unknown parameters are
 * ignored, as on plain `src`.
 */
export function srcOptions(query: URLSearchParams): SrcOptions {
  const given = Object.values(NAMES)
    .flat()
    .filter((name) => query.has(name));
  const signed = query.has(SIGNATURE_PARAM);
  if (given.length === 0 && !signed) return null;
  const format = query.get("format");
  const plainFormat = format === null || (PLAIN_FORMATS as readonly string[]).includes(format);
  if (!signed && plainFormat && given.every((name) => name === "w" || name === "format")) {
    const variant = variantOptions(query);
    return variant && { variant };
  }
  return { transform: transformRequest(query, signed) };
}

/** What a signed URL may ask for: anything the media service makes (MAX_TRANSFORM_SIDE, ...). */
const SIGNED_BOUNDS = {
  side: { from: 1, to: MAX_TRANSFORM_SIDE },
  quality: { from: 1, to: 100 },
  dpr: { from: 1, to: 3, fractional: true },
  blur: { from: 1, to: 250 },
} as const;
const UNSIGNED_BOUNDS = {
  side: { among: UNSIGNED.sides },
  quality: { among: UNSIGNED.qualities },
  dpr: { among: UNSIGNED.dprs },
  blur: { among: UNSIGNED.blurs },
} as const;

/** A transform's options, each within the bounds its URL may ask for (UNSIGNED unless `signed`). */
export function transformRequest(query: URLSearchParams, signed: boolean): TransformRequest {
  const bounds = signed ? SIGNED_BOUNDS : UNSIGNED_BOUNDS;
  const number = (option: "width" | "height" | "quality" | "dpr" | "blur") =>
    bounded(single(query, option), option, bounds[option === "width" || option === "height" ? "side" : option]);
  const width = number("width");
  const height = number("height");
  if (width === undefined && height === undefined) throw badRequest("A transform needs width (w) or height (h).");
  return {
    width,
    height,
    fit: oneOf(single(query, "fit") ?? DEFAULT_FIT, "fit", FITS) as Fit,
    gravity: gravityOf(single(query, "gravity"), signed),
    quality: number("quality"),
    dpr: number("dpr") ?? 1,
    blur: number("blur"),
    background: backgroundOf(single(query, "background"), signed),
    format: oneOf(single(query, "format") ?? "auto", "format", TRANSFORM_FORMATS) as TransformFormat,
    signed,
  };
}

function oneOf(value: string, option: string, allowed: readonly string[]): string {
  if (!allowed.includes(value)) throw badRequest(`${option} must be one of ${allowed.join(", ")}.`);
  return value;
}

/** Unsigned: one of a few values. Signed: a range, of whole numbers unless `fractional` (to 2 places). */
type Bounds = { among: readonly number[] } | { from: number; to: number; fractional?: boolean };

/** A number within `bounds`, or undefined when not given; the error names what is allowed. */
function bounded(text: string | undefined, option: string, bounds: Bounds): number | undefined {
  if (text === undefined) return undefined;
  const value = /^\d{1,5}(\.\d{1,2})?$/.test(text) ? Number(text) : Number.NaN;
  if ("among" in bounds) {
    if (bounds.among.includes(value)) return value;
    throw badRequest(`${option} must be one of ${bounds.among.join(", ")}${SIGNED_HINT}.`);
  }
  if (value >= bounds.from && value <= bounds.to && (bounds.fractional || Number.isInteger(value))) return value;
  throw badRequest(
    `${option} must be ${bounds.fractional ? "a number" : "a whole number"} from ${bounds.from} to ${bounds.to}.`,
  );
}

/** `auto`, a side, or a point `0.3x0.6`: unsigned, on the 0.1 grid only. */
function gravityOf(text: string | undefined, signed: boolean): UrlGravity {
  if (text === undefined) return "auto";
  if ((URL_GRAVITIES as readonly string[]).includes(text)) return text as UrlGravity;
  const point = parseGravity(text);
  const onGrid = /^(0(\.\d)?|1(\.0)?)x(0(\.\d)?|1(\.0)?)$/.test(text);
  if (point && typeof point === "object" && (signed || onGrid)) return point;
  throw badRequest(
    `gravity must be one of ${URL_GRAVITIES.join(", ")}, or a point such as 0.3x0.6 ` +
      `(fractions of the width and height${signed ? ", to 3 places" : `, on the 0.1 grid${SIGNED_HINT}`}).`,
  );
}

/** pad's fill as `rrggbbaa`: white, black or transparent; signed, any `rrggbb` or `rrggbbaa` too. */
function backgroundOf(text: string | undefined, signed: boolean): string {
  if (text === undefined) return DEFAULT_BACKGROUND;
  const named = NAMED_BACKGROUNDS[text];
  if (named) return named;
  const hex = text.toLowerCase();
  if (signed && /^[0-9a-f]{6}([0-9a-f]{2})?$/.test(hex)) return hex.length === 6 ? `${hex}ff` : hex;
  throw badRequest(
    `background must be one of ${UNSIGNED.backgrounds.join(", ")}` +
      (signed ? ", or a hex colour rrggbb or rrggbbaa." : `${SIGNED_HINT} hex colour (rrggbb or rrggbbaa).`),
  );
}
