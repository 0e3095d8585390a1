/** What an image variant, a transform or a video's poster may be encoded as. */
export const VARIANT_ENCODINGS = ["avif", "webp", "jpeg", "png"] as const;
export type VariantEncoding = (typeof VARIANT_ENCODINGS)[number];

/**
 * An image transform (`src?w=&h=&fit=&gravity=...`, src/uploads/variants) as the media service
 * takes it: sizes in output pixels (the Worker has multiplied them by the request's DPR), every
 * option resolved (a stored focal point is a `point` by now), nothing left to default.
 *
 * Fits, as Cloudflare Images names them:
 * - `scale-down`: within width x height, aspect kept, never enlarged;
 * - `contain`: within width x height, aspect kept, enlarged when smaller;
 * - `cover`: exactly width x height, enlarged when smaller, the overflow cut at `gravity`;
 * - `crop`: as cover, but never enlarged (a side smaller than the box stays as it is);
 * - `pad`: as contain, then the rest of width x height filled with `background`.
 * With only one side given, every fit scales to it (scale-down and crop never enlarge).
 */
export const FITS = ["scale-down", "contain", "cover", "crop", "pad"] as const;
export type Fit = (typeof FITS)[number];

/** Where a crop keeps the image: a side or the centre, what matters (`attention`), or a point. */
export const GRAVITY_NAMES = ["center", "top", "bottom", "left", "right", "attention"] as const;
export type GravityName = (typeof GRAVITY_NAMES)[number];
/** A point as fractions of the upright image's width and height, 0 to 1 (0,0 the top left). */
export interface GravityPoint {
  x: number;
  y: number;
}
export type Gravity = GravityName | GravityPoint;

/** The largest side and area a transform may have, whoever asks. */
export const MAX_TRANSFORM_SIDE = 8192;
export const MAX_TRANSFORM_PIXELS = 40_000_000;

export interface ImageTransform {
  /** At least one of width and height; each 1 to MAX_TRANSFORM_SIDE. */
  width?: number;
  height?: number;
  fit: Fit;
  gravity: Gravity;
  /** 1-100; absent: the encoding's own default (as plain variants). */
  quality?: number;
  /** Gaussian blur radius, 1-250 (sigma = radius / 2), applied after resizing. */
  blur?: number;
  /** `rrggbbaa` hex, lower case: pad's fill, and what transparency lies on in a JPEG. */
  background: string;
  to: VariantEncoding;
}

/** A gravity as the query and keys write it: its name, or `0.3x0.6`. */
export const gravityText = (gravity: Gravity) =>
  typeof gravity === "string" ? gravity : `${roundFraction(gravity.x)}x${roundFraction(gravity.y)}`;

/** Fractions to 3 places: finer than any crop can tell apart below 1000 px a side. */
export const roundFraction = (value: number) => Math.round(value * 1000) / 1000;

/** The transform's query (contract.ts callPath). */
export function transformQuery(transform: ImageTransform, query: URLSearchParams): void {
  if (transform.width !== undefined) query.set("width", String(transform.width));
  if (transform.height !== undefined) query.set("height", String(transform.height));
  query.set("fit", transform.fit);
  query.set("gravity", gravityText(transform.gravity));
  if (transform.quality !== undefined) query.set("quality", String(transform.quality));
  if (transform.blur !== undefined) query.set("blur", String(transform.blur));
  query.set("background", transform.background);
  query.set("to", transform.to);
}

/** The transform a query names, or a reason it names none (the service answers 400). */
export function parseTransform(query: URLSearchParams, encodings: readonly VariantEncoding[]): ImageTransform | string {
  const side = (name: string) => {
    const text = query.get(name);
    if (text === null) return undefined;
    const value = Number(text);
    return Number.isInteger(value) && value >= 1 && value <= MAX_TRANSFORM_SIDE ? value : Number.NaN;
  };
  const width = side("width");
  const height = side("height");
  if (Number.isNaN(width) || Number.isNaN(height)) return `width and height must be 1 to ${MAX_TRANSFORM_SIDE}`;
  if (width === undefined && height === undefined) return "width or height is needed";
  if ((width ?? 1) * (height ?? 1) > MAX_TRANSFORM_PIXELS) return `at most ${MAX_TRANSFORM_PIXELS} pixels`;
  const fit = query.get("fit") as Fit;
  if (!FITS.includes(fit)) return `fit must be one of ${FITS.join(", ")}`;
  const gravity = parseGravity(query.get("gravity") ?? "");
  if (!gravity) return "gravity must be a name or a point such as 0.3x0.6";
  const quality = optionalInteger(query.get("quality"), 1, 100);
  const blur = optionalInteger(query.get("blur"), 1, 250);
  if (Number.isNaN(quality) || Number.isNaN(blur)) return "quality must be 1 to 100 and blur 1 to 250";
  const background = query.get("background") ?? "";
  if (!/^[0-9a-f]{8}$/.test(background)) return "background must be rrggbbaa";
  const to = query.get("to") as VariantEncoding;
  if (!encodings.includes(to)) return `to must be one of ${encodings.join(", ")}`;
  return { width, height, fit, gravity, quality, blur, background, to };
}

/** A gravity's name or point, or null. */
export function parseGravity(text: string): Gravity | null {
  if ((GRAVITY_NAMES as readonly string[]).includes(text)) return text as GravityName;
  const match = /^(0(?:\.\d{1,3})?|1(?:\.0{1,3})?)x(0(?:\.\d{1,3})?|1(?:\.0{1,3})?)$/.exec(text);
  return match ? { x: Number(match[1]), y: Number(match[2]) } : null;
}

function optionalInteger(text: string | null, min: number, max: number): number | undefined {
  if (text === null) return undefined;
  const value = Number(text);
  return Number.isInteger(value) && value >= min && value <= max ? value : Number.NaN;
}
