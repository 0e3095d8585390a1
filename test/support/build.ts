import { crc32 } from "../../src/media/strip/crc32.ts";

/**
 * Image and video files built structure by structure, for tests of the parsers: every size and
 * field is whatever the test says, valid or not. Runs in Node and in workerd alike.
 */

export const latin1 = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0));

export function join(...parts: (Uint8Array | number[])[]): Uint8Array {
  const arrays = parts.map((p) => (p instanceof Uint8Array ? p : Uint8Array.from(p)));
  const out = new Uint8Array(arrays.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of arrays) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export const u16be = (v: number) => [(v >>> 8) & 255, v & 255];
export const u16le = (v: number) => [v & 255, (v >>> 8) & 255];
export const u24le = (v: number) => [v & 255, (v >>> 8) & 255, (v >>> 16) & 255];
export const u32be = (v: number) => [(v >>> 24) & 255, (v >>> 16) & 255, (v >>> 8) & 255, v & 255];
export const u32le = (v: number) => [v & 255, (v >>> 8) & 255, (v >>> 16) & 255, (v >>> 24) & 255];

/* PNG */

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

export function pngChunk(type: string, data: Uint8Array | number[] = []) {
  const body = join(latin1(type), data);
  return join(u32be(body.length - 4), body, u32be(crc32(body)));
}

/** IHDR of an 8-bit image, RGBA unless `colourType` says otherwise (2: RGB). */
export const ihdr = (width: number, height: number, colourType = 6) =>
  pngChunk("IHDR", join(u32be(width), u32be(height), [8, colourType, 0, 0, 0]));

/** A PNG: the signature, these chunks, IEND. */
export const pngFile = (...chunks: Uint8Array[]) => join(PNG_SIGNATURE, ...chunks, pngChunk("IEND"));

/** A 1x1 PNG's IDAT: a filter byte and one RGBA pixel, zlib-compressed. */
export const ONE_PIXEL_IDAT = pngChunk("IDAT", [0x78, 0x9c, 0x63, 0x60, 0x00, 0x02, 0x00, 0x00, 0x05, 0x00, 0x01]);

/** acTL/fcTL of an APNG: one frame of the given size at an offset. */
export const actl = (frames: number) => pngChunk("acTL", join(u32be(frames), u32be(0)));
export const fctl = (sequence: number, width: number, height: number, x = 0, y = 0) =>
  pngChunk("fcTL", join(u32be(sequence), u32be(width), u32be(height), u32be(x), u32be(y), u16be(1), u16be(10), [0, 0]));

/* WebP */

export function webpChunk(type: string, data: Uint8Array | number[]) {
  const body = data instanceof Uint8Array ? data : Uint8Array.from(data);
  return join(latin1(type), u32le(body.length), body, body.length & 1 ? [0] : []);
}

/** A RIFF/WEBP file of these chunks, its RIFF size right. */
export function webpFile(...chunks: Uint8Array[]) {
  const body = join(latin1("WEBP"), ...chunks);
  return join(latin1("RIFF"), u32le(body.length), body);
}

export const VP8X_ANIMATION = 0x02;
export const VP8X_EXIF = 0x08;

export const vp8x = (width: number, height: number, flags = 0) =>
  webpChunk("VP8X", [flags, 0, 0, 0, ...u24le(width - 1), ...u24le(height - 1)]);

/** A lossless bitstream header declaring a size (its image data is not decodable). */
export const vp8l = (width: number, height: number) => {
  const bits = (width - 1) | ((height - 1) << 14);
  return webpChunk("VP8L", [0x2f, ...u32le(bits >>> 0), 0, 0, 0]);
};

/** A lossy key frame header declaring a size (its image data is not decodable). */
export const vp8 = (width: number, height: number) =>
  webpChunk("VP8 ", [0x10, 0x02, 0x00, 0x9d, 0x01, 0x2a, ...u16le(width), ...u16le(height), 0, 0]);

/** An animation frame at (x, y) of a size, holding the given chunks. */
export const anmf = (x: number, y: number, width: number, height: number, ...chunks: Uint8Array[]) =>
  webpChunk("ANMF", join(u24le(x / 2), u24le(y / 2), u24le(width - 1), u24le(height - 1), u24le(100), [0], ...chunks));

/* JPEG */

export const jpegSegment = (marker: number, payload: Uint8Array | number[]) => {
  const body = payload instanceof Uint8Array ? payload : Uint8Array.from(payload);
  return join([0xff, marker], u16be(body.length + 2), body);
};

export const sof0 = (width: number, height: number) =>
  jpegSegment(0xc0, [8, ...u16be(height), ...u16be(width), 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);

/** A scan: its header for one component, then entropy-coded data (two bytes unless given). */
export const jpegScan = (data: Uint8Array | number[] = [0x12, 0x34]) =>
  join(jpegSegment(0xda, [1, 1, 0, 0, 63, 0]), data);

export const SOI = [0xff, 0xd8];
export const EOI = [0xff, 0xd9];

/* GIF */

/** Header and logical screen without a global colour table. */
export const gifScreen = (width: number, height: number) =>
  join(latin1("GIF89a"), u16le(width), u16le(height), [0, 0, 0]);

/** An image descriptor with a 2-colour local table and a one-pixel LZW stream. */
export const gifImage = (left: number, top: number, width: number, height: number) =>
  join(
    [0x2c],
    u16le(left),
    u16le(top),
    u16le(width),
    u16le(height),
    [0x80],
    [0, 0, 0, 255, 255, 255],
    [2, 2, 0x4c, 0x01, 0],
  );

export const gifComment = (text: Uint8Array) =>
  join([0x21, 0xfe], ...chunksOf(text, 255).map((c) => join([c.length], c)), [0]);

export const GIF_TRAILER = [0x3b];

function chunksOf(bytes: Uint8Array, size: number) {
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.subarray(at, at + size));
  return out;
}

/* ISO BMFF (MP4, MOV, 3GP, HEIF) */

export function box(type: string, ...parts: (Uint8Array | number[])[]) {
  const body = join(...parts);
  return join(u32be(8 + body.length), latin1(type), body);
}

/** A box with a 64-bit size field. */
export function largeBox(type: string, ...parts: (Uint8Array | number[])[]) {
  const body = join(...parts);
  const size = 16 + body.length;
  return join(u32be(1), latin1(type), u32be(Math.floor(size / 2 ** 32)), u32be(size >>> 0), body);
}

export const XMP_UUID = [
  0xbe, 0x7a, 0xcf, 0xcb, 0x97, 0xa9, 0x42, 0xe8, 0x9c, 0x71, 0x99, 0x94, 0x91, 0xe3, 0xaf, 0xac,
];

/* TIFF */

/** A classic TIFF header: byte order, version 42, the first directory's offset. */
export const tiffHeader = (little: boolean, first = 8) =>
  join(latin1(little ? "II" : "MM"), little ? [42, 0] : [0, 42], (little ? u32le : u32be)(first));

/**
 * A little-endian TIFF of one 1x1 directory that has `entries` SubIFDs entries, each listing the
 * same 256 offsets of zeros: followed naively, a queue of 256 directories per entry.
 */
export function tiffOfManySubIfds(entries: number) {
  const entry = (tag: number, count: number, value: number) => join(u16le(tag), u16le(4), u32le(count), u32le(value));
  const zeros = 8 + 2 + (entries + 2) * 12 + 4;
  const subIfds = Array.from({ length: entries }, () => entry(330, 256, zeros));
  const ifd = join(u16le(entries + 2), entry(256, 1, 1), entry(257, 1, 1), ...subIfds, u32le(0));
  return join(tiffHeader(true), ifd, new Uint8Array(4 * 256));
}

/** One classic TIFF directory (12-byte entries of SHORT or LONG values) and its next-IFD offset. */
export function tiffIfd(little: boolean, entries: [tag: number, type: 3 | 4, value: number][], next = 0) {
  const u16 = little ? u16le : u16be;
  const u32 = little ? u32le : u32be;
  const sorted = [...entries].sort((a, b) => a[0] - b[0]);
  return join(
    u16(sorted.length),
    ...sorted.map(([tag, type, value]) =>
      join(u16(tag), u16(type), u32(1), type === 3 ? [...u16(value), 0, 0] : u32(value)),
    ),
    u32(next),
  );
}

/* Seeded randomness, for reproducible corpora */

/** mulberry32: a small, fast PRNG; the same seed gives the same sequence everywhere. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  return { next, int: (below: number) => Math.floor(next() * below) };
}
