import {
  anmf,
  GIF_TRAILER,
  gifComment,
  gifImage,
  join,
  latin1,
  prng,
  u16le,
  VP8X_ANIMATION,
  vp8l,
  vp8x,
  webpChunk,
  webpFile,
} from "../../support/build";
import { fixture, fixtureNames } from "../helpers";

/** Image and video files, by extension (test/fixtures also holds a PDF, a ZIP and an SVG). */
const MEDIA = /\.(jpe?g|png|gif|webp|bmp|tiff?|heic|heif|avif|mp4|mov|m4v|3gp|webm|avi|mkv|mpe?g|wmv|flv)$/i;

/** Generated files that add what test/fixtures lacks: phone-style videos, TIFF, AVIF, a large WebP. */
const GENERATED = [
  "clip.mp4",
  "clip.mov",
  "rotated.mov",
  "phone.mov",
  "clip.3gp",
  "clip.m4v",
  "clip.mkv",
  "photo.tif",
  "photo.bmp",
  "gps.avif",
  "photo-2mp.webp",
  "grey-2mp.jpg",
].map((name) => `generated/${name}`);

export interface CorpusFile {
  name: string;
  bytes: Uint8Array;
}

/**
 * Files built here for structures no fixture has (their image data is a stand-in): an animated
 * GIF with a global colour table, a looping and a comment extension and two frames with graphic
 * control; an animated WebP (VP8X, ANIM, two ANMF frames).
 */
const BUILT: CorpusFile[] = [
  {
    name: "built/animated.gif",
    bytes: join(
      latin1("GIF89a"),
      u16le(4),
      u16le(4),
      [0x80, 0, 0, 0, 0, 0, 255, 255, 255],
      [0x21, 0xff, 11],
      latin1("NETSCAPE2.0"),
      [3, 1, 0, 0, 0],
      gifComment(latin1("a comment")),
      [0x21, 0xf9, 4, 0, 10, 0, 0, 0],
      gifImage(0, 0, 1, 1),
      [0x21, 0xf9, 4, 0, 10, 0, 0, 0],
      gifImage(2, 2, 1, 1),
      GIF_TRAILER,
    ),
  },
  {
    name: "built/animated.webp",
    bytes: webpFile(
      vp8x(4, 4, VP8X_ANIMATION),
      webpChunk("ANIM", [0, 0, 0, 0, 0, 0]),
      anmf(0, 0, 2, 2, vp8l(2, 2)),
      anmf(2, 2, 2, 2, vp8l(2, 2)),
    ),
  },
];

/** Every image and video of test/fixtures, the generated ones above, and the built ones. */
export async function corpusFiles(): Promise<CorpusFile[]> {
  const names = [...(await fixtureNames()).filter((name) => MEDIA.test(name)), ...GENERATED];
  return [...(await Promise.all(names.map(async (name) => ({ name, bytes: await fixture(name) })))), ...BUILT];
}

/** FNV-1a: a file's cases depend on the seed and its name only, so adding a file changes no other's. */
export function hash(text: string) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

export const TRUNCATIONS = 16;
export const FLIPPED_COPIES = 4;

/** Where headers are: half of the cuts and flips land here. */
const HEAD_BYTES = 4096;

/**
 * The corrupt versions of a file, reproducible from the seed: cut at 16 points (half within its
 * first 4 KiB, half spread over the rest), with a few bits flipped, and with bytes appended.
 */
export function corruptions({ name, bytes }: CorpusFile, seed: number): CorpusFile[] {
  const rng = prng(seed ^ hash(name));
  const head = Math.min(bytes.length, HEAD_BYTES);
  const position = (i: number) => (i % 2 ? rng.int(head) : rng.int(bytes.length));
  const out: CorpusFile[] = [];

  const cuts = new Set<number>();
  for (let k = 1; k <= TRUNCATIONS / 2; k++) {
    cuts.add(1 + rng.int(head - 1));
    cuts.add(Math.floor((bytes.length * k) / (TRUNCATIONS / 2 + 1)));
  }
  for (const cut of [...cuts].filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b))
    out.push({ name: `${name} cut at ${cut}`, bytes: bytes.subarray(0, cut) });

  for (let copy = 0; copy < FLIPPED_COPIES; copy++) {
    const flipped = bytes.slice();
    const flips = Array.from({ length: 1 + rng.int(8) }, (_, i) => [position(i), rng.int(8)] as const);
    for (const [at, bit] of flips) flipped[at]! ^= 1 << bit;
    out.push({
      name: `${name} with bits flipped at ${flips.map(([at, bit]) => `${at}.${bit}`).join(" ")}`,
      bytes: flipped,
    });
  }

  const tail = Uint8Array.from({ length: 1 + rng.int(512) }, () => rng.int(256));
  const appended = new Uint8Array(bytes.length + tail.length);
  appended.set(bytes);
  appended.set(tail, bytes.length);
  out.push({ name: `${name} with ${tail.length} bytes appended`, bytes: appended });
  return out;
}

/** Values that break size fields: zero, just under a header, the largest, sign bits, 64 KiB. */
const SIZE_VALUES = [0, 1, 7, 8, 16, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff];

/**
 * Harsher corruptions, cheap enough to run straight through the parsers (not the route): size
 * fields overwritten with values that break them, either byte order, and a slice of the file
 * repeated (a chunk, segment or box twice).
 */
export function structuralCorruptions({ name, bytes }: CorpusFile, seed: number, count = 12): CorpusFile[] {
  const rng = prng(seed ^ hash(`${name}#structural`));
  const head = Math.min(bytes.length, HEAD_BYTES);
  const out: CorpusFile[] = [];
  for (let i = 0; i < count && bytes.length >= 4; i++) {
    const at = rng.int(head - 3);
    const value = SIZE_VALUES[rng.int(SIZE_VALUES.length)]!;
    const little = rng.int(2) === 1;
    const copy = bytes.slice();
    new DataView(copy.buffer).setUint32(at, value, little);
    out.push({ name: `${name} with ${value} written at ${at}${little ? " (little-endian)" : ""}`, bytes: copy });
  }
  for (let i = 0; i < count / 4 && bytes.length >= 2; i++) {
    const start = rng.int(head);
    const end = Math.min(bytes.length, start + 1 + rng.int(4096));
    const at = rng.int(bytes.length);
    const repeated = new Uint8Array(bytes.length + end - start);
    repeated.set(bytes.subarray(0, at));
    repeated.set(bytes.subarray(start, end), at);
    repeated.set(bytes.subarray(at), at + end - start);
    out.push({ name: `${name} with bytes ${start}-${end} repeated at ${at}`, bytes: repeated });
  }
  return out;
}

/**
 * Ways a body may arrive: whole, in random pieces (1 byte to 64 KiB, mostly small), with its last
 * few bytes apart (where end markers are), and byte by byte when small.
 */
export function deliveries(bytes: Uint8Array, seed: number): Uint8Array[][] {
  const rng = prng(seed);
  const random: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; ) {
    const size = 1 + (rng.int(4) === 0 ? rng.int(64 * 1024) : rng.int(64));
    random.push(bytes.subarray(at, at + size));
    at += size;
  }
  const ends = [1, 2, 3]
    .filter((k) => k < bytes.length)
    .map((k) => [bytes.subarray(0, bytes.length - k), bytes.subarray(bytes.length - k)]);
  const bytewise =
    bytes.length <= 16 * 1024 ? [Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1))] : [];
  return [random, ...ends, ...bytewise];
}
