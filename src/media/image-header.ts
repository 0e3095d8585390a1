import { ascii, i32le, u16be, u16le, u32be, u32le } from "../bytes";
import { heif } from "./heif-header";
import { HEADER_LIMIT, info, invalid, more, withLargest, type HeaderResult, type Size } from "./image-info";
import type { Format } from "./sniff";

/*
 * Image headers read from a file's first bytes, one reader a format (the HEIF family's in
 * heif-header.ts): each answers with what the header declares (image-info.ts), a call for more
 * bytes, or a refusal.
 */

/** The integers of `b` in one byte order (`little`: little-endian), and whether a read at `at` fits. */
class Reader {
  constructor(
    readonly b: Uint8Array,
    readonly little = false,
  ) {}
  has(at: number, n: number) {
    return at >= 0 && at + n <= this.b.length;
  }
  u8(at: number) {
    return this.b[at]!;
  }
  u16(at: number) {
    return this.little ? u16le(this.b, at) : u16be(this.b, at);
  }
  u32(at: number) {
    return this.little ? u32le(this.b, at) : u32be(this.b, at);
  }
  ascii(at: number, n: number) {
    return ascii(this.b, at, n);
  }
}

/** Orientation (tag 0x0112) from a TIFF structure (EXIF payload or a TIFF file), or 1. */
export function tiffOrientation(tiff: Uint8Array): number {
  return tiffTags(tiff, [0x0112]).get(0x0112) ?? 1;
}

function tiffTags(tiff: Uint8Array, wanted: number[]): Map<number, number> {
  const found = new Map<number, number>();
  if (tiff.length < 8) return found;
  const order = ascii(tiff, 0, 2);
  if (order !== "II" && order !== "MM") return found;
  const r = new Reader(tiff, order === "II");
  const ifd = r.u32(4);
  if (!r.has(ifd, 2)) return found;
  const count = r.u16(ifd);
  for (let i = 0; i < count; i++) {
    const entry = ifd + 2 + i * 12;
    if (!r.has(entry, 12)) break;
    const tag = r.u16(entry);
    if (!wanted.includes(tag)) continue;
    const type = r.u16(entry + 2);
    found.set(tag, type === 3 ? r.u16(entry + 8) : r.u32(entry + 8));
  }
  return found;
}

function jpeg(b: Uint8Array): HeaderResult {
  const r = new Reader(b);
  let at = 2;
  let orientation = 1;
  for (;;) {
    if (!r.has(at, 4)) return more;
    if (r.u8(at) !== 0xff) return invalid("broken JPEG marker structure");
    const marker = r.u8(at + 1);
    if (marker === 0xff) {
      at++; // fill byte
      continue;
    }
    if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      at += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return invalid("JPEG without a frame header");
    const length = r.u16(at + 2);
    if (length < 2) return invalid("broken JPEG segment length");
    const isSof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isSof) {
      if (!r.has(at + 9, 1)) return more;
      return info(r.u16(at + 7), r.u16(at + 5), orientation, {
        jpegFrame: { bits: r.u8(at + 4), components: r.u8(at + 9) },
      });
    }
    if (marker === 0xe1) {
      if (!r.has(at, length + 2)) return more;
      if (r.ascii(at + 4, 6) === "Exif\0\0") orientation = tiffOrientation(b.subarray(at + 10, at + 2 + length));
    }
    at += 2 + length;
  }
}

function png(b: Uint8Array): HeaderResult {
  if (b.length < 24) return more;
  const r = new Reader(b);
  if (r.ascii(12, 4) !== "IHDR") return invalid("PNG without IHDR");
  return info(r.u32(16), r.u32(20));
}

function gif(b: Uint8Array): HeaderResult {
  if (b.length < 10) return more;
  const r = new Reader(b, true);
  return info(r.u16(6), r.u16(8));
}

function webp(b: Uint8Array): HeaderResult {
  if (b.length < 16) return more;
  const r = new Reader(b, true);
  const chunk = r.ascii(12, 4);
  if (b.length < (chunk === "VP8L" ? 25 : 30)) return more;
  if (chunk === "VP8X") {
    // 10 bytes by the specification; anything else is not a WebP any decoder agrees on.
    if (r.u32(16) !== 10) return invalid(`a VP8X chunk of ${r.u32(16)} bytes`);
    return info(1 + (r.u32(24) & 0xffffff), 1 + (r.u32(27) & 0xffffff));
  }
  if (chunk === "VP8L") {
    if (r.u8(20) !== 0x2f) return invalid("broken WebP lossless header");
    const bits = r.u32(21);
    return info(1 + (bits & 0x3fff), 1 + ((bits >>> 14) & 0x3fff));
  }
  if (chunk === "VP8 ") {
    if (r.u8(23) !== 0x9d || r.u8(24) !== 0x01 || r.u8(25) !== 0x2a) return invalid("broken WebP lossy header");
    return info(r.u16(26) & 0x3fff, r.u16(28) & 0x3fff);
  }
  return invalid("WebP without an image chunk");
}

function bmp(b: Uint8Array): HeaderResult {
  if (b.length < 26) return more;
  const r = new Reader(b, true);
  if (r.u32(14) === 12) return info(r.u16(18), r.u16(20));
  // Signed: a negative height means rows stored top-down.
  return info(i32le(b, 18), Math.abs(i32le(b, 22)));
}

/** Pages (directories) of a TIFF read at most; more is refused rather than followed. */
const MAX_TIFF_DIRECTORIES = 256;
const TIFF_SUB_IFDS = 330;
/**
 * Every directory of a TIFF (the chain of pages and their sub-directories), since a decoder may
 * read any of them: the first gives the size and orientation, the largest is checked too. The
 * first directory must lie in the bytes given; a later one past them (libtiff writes each page's
 * directory after its image data) is not followed once they are the first MiB or the whole file:
 * the decoder's own pixel limit covers those pages.
 */
function tiff(b: Uint8Array, complete: boolean): HeaderResult {
  if (b.length < 8) return more;
  const r = new Reader(b, b[0] === 0x49);
  if (r.u16(2) === 43) return invalid("BigTIFF is not supported");
  if (r.u16(2) !== 42) return invalid("broken TIFF header");
  const tooMany = invalid(`a TIFF of more than ${MAX_TIFF_DIRECTORIES} directories`);
  // No more bytes will come: what lies past them is out of reach rather than awaited.
  const final = complete || b.length >= HEADER_LIMIT;
  const pending = [r.u32(4)];
  if (pending[0] === 0) return invalid("TIFF without a directory");
  // Every offset queued counts (zeros and repeats too), so that the work stays bounded.
  let queued = 1;
  const queue = (offset: number) => {
    if (++queued > MAX_TIFF_DIRECTORIES) return false;
    if (offset !== 0) pending.push(offset);
    return true;
  };
  const seen = new Set<number>();
  const pages: (Size & { orientation: number })[] = [];
  let entriesRead = 0;
  for (let p = 0; p < pending.length; p++) {
    const ifd = pending[p]!;
    if (seen.has(ifd)) continue;
    seen.add(ifd);
    const inReach = r.has(ifd, 2) && r.has(ifd + 2, r.u16(ifd) * 12);
    if (!inReach) {
      if (p === 0 || !final) return more;
      continue;
    }
    const count = r.u16(ifd);
    // Directories that overlap could make this read far more than the bytes it was given.
    entriesRead += count;
    if (entriesRead * 12 > b.length) return invalid("TIFF directories overlap");
    const page = { width: 0, height: 0, orientation: 1 };
    for (let i = 0; i < count; i++) {
      const entry = ifd + 2 + i * 12;
      const tag = r.u16(entry);
      const type = r.u16(entry + 2);
      const value = type === 3 ? r.u16(entry + 8) : r.u32(entry + 8);
      if (tag === 256) page.width = value;
      else if (tag === 257) page.height = value;
      else if (tag === 0x0112) page.orientation = value;
      else if (tag === TIFF_SUB_IFDS) {
        const n = r.u32(entry + 4);
        if (n > MAX_TIFF_DIRECTORIES) return tooMany;
        const at = n === 1 ? entry + 8 : r.u32(entry + 8);
        if (!r.has(at, 4 * n)) {
          if (!final) return more;
          continue;
        }
        for (let k = 0; k < n; k++) if (!queue(r.u32(at + 4 * k))) return tooMany;
      }
    }
    // A file may end right after its last directory, without the next-directory offset.
    const next = ifd + 2 + count * 12;
    if (r.has(next, 4)) {
      const offset = r.u32(next);
      if (offset !== 0 && !queue(offset)) return tooMany;
    } else if (!final) return more;
    pages.push(page);
  }
  const first = pages[0]!;
  return withLargest(info(first.width, first.height, first.orientation), pages);
}

/**
 * The header of an image from its first bytes: `complete` when they are the whole file (then a
 * structure running past them is truncated, not waiting for more).
 */
export function readImageHeader(format: Format, bytes: Uint8Array, complete = false): HeaderResult {
  switch (format) {
    case "jpeg":
      return jpeg(bytes);
    case "png":
      return png(bytes);
    case "gif":
      return gif(bytes);
    case "webp":
      return webp(bytes);
    case "bmp":
      return bmp(bytes);
    case "tiff":
      return tiff(bytes, complete);
    case "heic":
    case "heif":
    case "avif":
      return heif(bytes);
    default:
      return invalid("not an image");
  }
}
