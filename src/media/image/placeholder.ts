import { rgbaToThumbHash } from "thumbhash";
import { isolateMemory } from "../../limits/isolate-memory";
import { HEADER_LIMIT } from "../image-info";
import { codecMemoryModel } from "./budget";
import { codecMemory, decode, type Pixels } from "./codecs";
import { shrinkByFactor } from "./pixels";
import { describeImage } from "./render";

/**
 * What a page paints where an image will be before it arrives: its ThumbHash (a blurred sketch of
 * about 25 bytes, https://evanw.github.io/thumbhash/) and its average colour, both made from the
 * upload's thumbnail (a WebP at most THUMB_WIDTH wide, a video's poster too).
 */
export interface Placeholder {
  /** The ThumbHash, base64. */
  placeholder: string;
  /** The average colour, `#rrggbb`, weighted by alpha (a transparent pixel gives none of its colour). */
  color: string;
}

/**
 * ThumbHash takes at most 100 x 100 pixels, but keeps at most 7 cosines along a side, which 48
 * pixels carry as well: its cost grows with the pixels (a 280 x 210 thumbnail's hash took 0.54 ms
 * at 94 x 70, 0.16 ms at 47 x 35, measured in Node), and every small upload makes one. At 32 the
 * sketch of a thumbnail's pixels and of its lossy WebP decoded again began to differ.
 */
const THUMBHASH_SIDE = 48;
/**
 * Thumbnails are at most 280 px wide but as tall as their image's shape makes them: past this, a
 * stored "thumbnail" is not one, and is not decoded here.
 */
export const PLACEHOLDER_MAX_PIXELS = 4_000_000;

/** From a thumbnail's decoded pixels (RGBA, not premultiplied). */
export function placeholderOfPixels(pixels: Pixels): Placeholder {
  // Box averaging (alpha-weighted) to at most 48 x 48: what ThumbHash keeps is its lowest
  // frequencies, which an average keeps exactly, and no WebAssembly resampler grows for it.
  const factor = Math.ceil(Math.max(pixels.width, pixels.height) / THUMBHASH_SIDE);
  const small = shrinkByFactor(pixels, factor);
  const hash = rgbaToThumbHash(small.width, small.height, small.data);
  return { placeholder: btoa(String.fromCharCode(...hash)), color: averageColor(pixels) };
}

/** The alpha-weighted mean of the pixels' colour; a wholly transparent image's is black. */
export function averageColor({ data }: Pixels): string {
  let r = 0;
  let g = 0;
  let b = 0;
  let weight = 0;
  for (let i = 0; i < data.length; i += 4) {
    const a = data[i + 3]!;
    r += data[i]! * a;
    g += data[i + 1]! * a;
    b += data[i + 2]! * a;
    weight += a;
  }
  const hex = (sum: number) =>
    Math.round(weight ? sum / weight : 0)
      .toString(16)
      .padStart(2, "0");
  return `#${hex(r)}${hex(g)}${hex(b)}`;
}

/**
 * From a thumbnail's WebP bytes, decoded in this isolate within its memory account. Null when the
 * account has no room now (worth trying again later); throws when the bytes are not a WebP image
 * of a thumbnail's size that the codec decodes (not worth trying again).
 */
export async function placeholderOfWebp(bytes: Uint8Array): Promise<Placeholder | null> {
  const image = describeImage(bytes.subarray(0, HEADER_LIMIT), bytes.length);
  if (image?.format !== "webp" || image.animated) throw new Error("the thumbnail is not a still WebP image");
  const pixels = image.storedWidth * image.storedHeight;
  if (pixels > PLACEHOLDER_MAX_PIXELS) throw new Error(`the thumbnail has ${pixels} pixels`);
  const loaded = codecMemory().get("webp-decode") ?? 0;
  const growth = Math.max(0, codecMemoryModel("webp-decode", pixels, bytes.length) - loaded);
  // The decoder's growth and the decoded pixels; the 100 x 100 copy and the hash are small.
  const reservation = isolateMemory.tryReserve(growth + 4 * pixels);
  if (!reservation) return null;
  try {
    return placeholderOfPixels(await decode("webp", bytes));
  } finally {
    reservation.release();
  }
}
