import { ascii, u32be } from "../bytes";

/**
 * Image dimensions and orientation read from the header alone, so that size limits are decided
 * before any pixel is decoded. `width`/`height` are the upright display size.
 */
export interface ImageInfo {
  width: number;
  height: number;
  /** Stored pixel size, before orientation. */
  storedWidth: number;
  storedHeight: number;
  /** EXIF orientation 1-8 (1 when absent). 5-8 swap the axes. */
  orientation: number;
  /** JPEG only: sample precision and colour components of the frame (4 is CMYK or YCCK). */
  jpegFrame?: { bits: number; components: number };
  /**
   * The largest other size the header declares (a TIFF page, a HEIF item), stored axes, when it
   * has a longer side than the image itself: size limits apply to it too, since a decoder may
   * pick it.
   */
  largest?: { width: number; height: number };
}

/** What a header reader answers: the image's info, a call for more bytes, or a refusal. */
export type HeaderResult = ImageInfo | { need: "more" } | { invalid: string };

export const more = { need: "more" } as const;
export const invalid = (reason: string) => ({ invalid: reason });

/** The info of an image stored `storedWidth` x `storedHeight`, turned as `orientation` says (1 if not 1-8). */
export function info(
  storedWidth: number,
  storedHeight: number,
  orientation = 1,
  extra: Partial<ImageInfo> = {},
): HeaderResult {
  if (!(storedWidth > 0 && storedHeight > 0)) return invalid("the image header gives no size");
  const o = orientation >= 1 && orientation <= 8 ? orientation : 1;
  const swap = o >= 5;
  return {
    width: swap ? storedHeight : storedWidth,
    height: swap ? storedWidth : storedHeight,
    storedWidth,
    storedHeight,
    orientation: o,
    ...extra,
  };
}

export type Size = { width: number; height: number };

const longestSide = (s: Size) => Math.max(s.width, s.height);

/** `header` with `largest` set when one of `sizes` has a longer side than the image itself. */
export function withLargest(header: HeaderResult, sizes: Size[]): HeaderResult {
  if (!("width" in header)) return header;
  const own = { width: header.storedWidth, height: header.storedHeight };
  const biggest = sizes.reduce((a, s) => (longestSide(s) > longestSide(a) ? s : a), own);
  return biggest === own ? header : { ...header, largest: { width: biggest.width, height: biggest.height } };
}

/**
 * The most of a file any image's header is read from, on upload and by later jobs alike: what
 * lies past it is not waited for.
 */
export const HEADER_LIMIT = 1024 * 1024;
/** How much of a file's head says whether it is animated: as much as is read for its header. */
const ANIMATION_HEAD_BYTES = HEADER_LIMIT;

/**
 * What a PNG's chunks, walked from the signature, say of animation: an `acTL` chunk before the
 * first `IDAT` (an APNG), an `IDAT` first (a still image), or null when `head` ends before either.
 * By chunk, not by searching the bytes: "acTL" inside a text chunk's data says nothing, and a
 * walk reads a few bytes a chunk rather than the whole head.
 */
function pngAnimation(head: Uint8Array): "animated" | "still" | null {
  for (let at = 8; at + 8 <= head.length; at += 12 + u32be(head, at)) {
    const type = ascii(head, at + 4, 4);
    if (type === "acTL") return "animated";
    if (type === "IDAT") return "still";
  }
  return null;
}

/**
 * Whether `head` says enough to tell animation: a PNG's acTL comes before its image data, after
 * any other chunks (a large colour profile, text), so a head that ends before either may not yet
 * tell; past ANIMATION_HEAD_BYTES it is taken as still.
 */
export const animationKnown = (format: string, head: Uint8Array) =>
  format !== "png" || head.length >= ANIMATION_HEAD_BYTES || pngAnimation(head) !== null;

/** An animated WebP (VP8X animation flag) or PNG (acTL before the image data). */
export function isAnimated(format: string, head: Uint8Array): boolean {
  if (format === "gif") return true; // decided by its frames; GIF never goes to the Worker anyway
  if (format === "webp") return ascii(head, 12, 4) === "VP8X" && (head[20]! & 0x02) !== 0;
  if (format === "png") return pngAnimation(head.subarray(0, ANIMATION_HEAD_BYTES)) === "animated";
  return false;
}
