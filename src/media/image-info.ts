import { ascii, i32le, u16be, u16le, u32be, u32le, u64be } from "../bytes";
import type { Format } from "./sniff";

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

type HeaderResult = ImageInfo | { need: "more" } | { invalid: string };

const more = { need: "more" } as const;
const invalid = (reason: string) => ({ invalid: reason });

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

function info(
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

type Size = { width: number; height: number };

const longestSide = (s: Size) => Math.max(s.width, s.height);

/** `header` with `largest` set when one of `sizes` has a longer side than the image itself. */
function withLargest(header: HeaderResult, sizes: Size[]): HeaderResult {
  if (!("width" in header)) return header;
  const own = { width: header.storedWidth, height: header.storedHeight };
  const biggest = sizes.reduce((a, s) => (longestSide(s) > longestSide(a) ? s : a), own);
  return biggest === own ? header : { ...header, largest: { width: biggest.width, height: biggest.height } };
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
 * The most of a file any image's header is read from, on upload and by later jobs alike: what
 * lies past it is not waited for.
 */
export const HEADER_LIMIT = 1024 * 1024;
/** How much of a file's head says whether it is animated: as much as is read for its header. */
const ANIMATION_HEAD_BYTES = HEADER_LIMIT;

/**
 * Whether `head` says enough to tell animation: a PNG's acTL comes before its image data, after
 * any other chunks (a large colour profile, text), so a head holding neither acTL nor IDAT may
 * not yet tell; past ANIMATION_HEAD_BYTES it is taken as still.
 */
export const animationKnown = (format: string, head: Uint8Array) =>
  format !== "png" ||
  head.length >= ANIMATION_HEAD_BYTES ||
  /acTL|IDAT/.test(new TextDecoder("latin1").decode(head.subarray(0, ANIMATION_HEAD_BYTES)));

/** An animated WebP (VP8X animation flag) or PNG (acTL before the image data). */
export function isAnimated(format: string, head: Uint8Array): boolean {
  if (format === "gif") return true; // decided by its frames; GIF never goes to the Worker anyway
  const text = new TextDecoder("latin1").decode(head.subarray(0, ANIMATION_HEAD_BYTES));
  if (format === "webp") return text.slice(12, 16) === "VP8X" && (head[20]! & 0x02) !== 0;
  if (format === "png") {
    const actl = text.indexOf("acTL");
    const idat = text.indexOf("IDAT");
    return actl !== -1 && (idat === -1 || actl < idat);
  }
  return false;
}

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
 * HEIF family (HEIC, HEIF, AVIF): the primary item's `ispe` property gives its size and `irot`
 * its rotation (anticlockwise quarter turns); both hang off meta/iprp, linked by `ipma`.
 */
function heif(b: Uint8Array): HeaderResult {
  const r = new Reader(b);
  const boxes = (start: number, end: number) => {
    const out: { type: string; at: number; body: number; end: number }[] = [];
    for (let at = start; at + 8 <= end; ) {
      let size = r.u32(at);
      const type = r.ascii(at + 4, 4);
      let body = at + 8;
      if (size === 1) {
        if (!r.has(at, 16)) break;
        size = u64be(b, at + 8);
        body = at + 16;
      } else if (size === 0) size = end - at;
      if (size < 8) break;
      out.push({ type, at, body, end: Math.min(at + size, end) });
      at += size;
    }
    return out;
  };
  const meta = boxes(0, b.length).find((x) => x.type === "meta");
  if (!meta) return b.length > 1024 * 1024 ? invalid("HEIF without metadata") : more;
  if (meta.end > b.length) return more;
  const inMeta = boxes(meta.body + 4, meta.end); // meta is a full box: 4 bytes version/flags
  const pitm = inMeta.find((x) => x.type === "pitm");
  const primary = pitm ? (r.u8(pitm.body) === 0 ? r.u16(pitm.body + 4) : r.u32(pitm.body + 4)) : 1;
  const iprp = inMeta.find((x) => x.type === "iprp");
  if (!iprp) return invalid("HEIF without item properties");
  const inIprp = boxes(iprp.body, iprp.end);
  const ipco = inIprp.find((x) => x.type === "ipco");
  const ipma = inIprp.find((x) => x.type === "ipma");
  if (!ipco || !ipma) return invalid("HEIF without item properties");
  const properties = boxes(ipco.body, ipco.end);

  const version = r.u8(ipma.body);
  const flags = r.u32(ipma.body) & 0xffffff;
  let at = ipma.body + 4;
  const entries = r.u32(at);
  at += 4;
  let associated: number[] = [];
  for (let i = 0; i < entries && at < ipma.end; i++) {
    const item = version < 1 ? r.u16(at) : r.u32(at);
    at += version < 1 ? 2 : 4;
    const count = r.u8(at++);
    const indexes: number[] = [];
    for (let k = 0; k < count; k++) {
      const value = flags & 1 ? r.u16(at) & 0x7fff : r.u8(at) & 0x7f;
      at += flags & 1 ? 2 : 1;
      indexes.push(value);
    }
    if (item === primary) associated = indexes;
  }
  let width = 0;
  let height = 0;
  let quarterTurns = 0;
  for (const index of associated) {
    const p = properties[index - 1];
    if (!p) continue;
    if (p.type === "ispe") {
      width = r.u32(p.body + 4);
      height = r.u32(p.body + 8);
    } else if (p.type === "irot") {
      quarterTurns = r.u8(p.body) & 3;
    }
  }
  if (!width || !height) return invalid("HEIF without an image size");
  // Express the rotation as the EXIF orientation it is equivalent to.
  const orientation = [1, 8, 3, 6][quarterTurns]!;
  // Every item's size counts, not only the primary's (thumbnails, grid tiles, hidden images).
  const items = properties
    .filter((p) => p.type === "ispe")
    .map((p) => ({ width: r.u32(p.body + 4), height: r.u32(p.body + 8) }));
  return withLargest(info(width, height, orientation), items);
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
