import { describe, expect, it } from "vitest";
import { concatBytes } from "../../../src/bytes";
import { ApiError } from "../../../src/errors";
import { stripperFor, type Stripper } from "../../../src/media/strip";
import type { Format } from "../../../src/media/sniff";
import {
  anmf,
  box,
  EOI,
  gifComment,
  gifImage,
  gifScreen,
  GIF_TRAILER,
  ihdr,
  join,
  jpegScan,
  jpegSegment,
  latin1,
  ONE_PIXEL_IDAT,
  pngChunk,
  pngFile,
  SOI,
  sof0,
  u32le,
  vp8,
  vp8l,
  vp8x,
  VP8X_EXIF,
  webpChunk,
  webpFile,
} from "../../support/build";
import { contains } from "../../support/boxes";

/** What a stripper may keep between two pushes, whatever the sizes a file declares. */
const HELD_LIMIT = 64 * 1024;
const MiB = 1024 * 1024;

interface Fed {
  output: Uint8Array;
  maxHeld: number;
  /** The 422 the stripper refused the file with, and how many bytes it had been given by then. */
  refused: { message: string; atByte: number } | null;
}

/** Pushes a file in pieces of `piece` bytes, as an upload arrives, watching what the stripper holds. */
function feed(stripper: Stripper, file: Uint8Array, piece: number): Fed {
  const out: Uint8Array[] = [];
  let maxHeld = 0;
  let at = 0;
  try {
    for (; at < file.length; at += piece) {
      out.push(...stripper.push(file.subarray(at, at + piece)));
      maxHeld = Math.max(maxHeld, stripper.heldBytes());
    }
    out.push(...stripper.end());
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 422) throw error;
    return {
      output: concatBytes(out),
      maxHeld,
      refused: { message: error.message, atByte: Math.min(at + piece, file.length) },
    };
  }
  return { output: concatBytes(out), maxHeld, refused: null };
}

const filled = (size: number, seed = 7) => {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + seed) & 0x7f; // never 0xFF: no JPEG markers inside
  return bytes;
};

const SECRET = latin1("GPS 48.8584 2.2945");

/**
 * Files with one structure of `size` bytes (or several making up `size` where the format caps
 * a unit, as JPEG does at 64 KiB), and what should become of them.
 */
const HUGE: {
  name: string;
  format: Format;
  build: (size: number) => Uint8Array;
  expect: "refused" | "kept" | "dropped" | "blanked";
}[] = [
  {
    name: "WebP with a VP8X chunk declaring more than its 10 bytes",
    format: "webp",
    build: (size) =>
      webpFile(webpChunk("VP8X", join([0, 0, 0, 0, 0, 0, 0, 0, 0, 0], new Uint8Array(size - 10))), vp8l(1, 1)),
    expect: "refused",
  },
  {
    name: "WebP with a huge EXIF chunk",
    format: "webp",
    build: (size) => webpFile(vp8x(1, 1, VP8X_EXIF), vp8l(1, 1), webpChunk("EXIF", join(SECRET, filled(size)))),
    expect: "dropped",
  },
  {
    name: "WebP with a huge XMP chunk before the image",
    format: "webp",
    build: (size) => webpFile(vp8x(1, 1), webpChunk("XMP ", join(SECRET, filled(size))), vp8l(1, 1)),
    expect: "dropped",
  },
  {
    name: "WebP with a huge lossless bitstream",
    format: "webp",
    build: (size) => webpFile(webpChunk("VP8L", join([0x2f, ...u32le(0)], filled(size)))),
    expect: "kept",
  },
  {
    name: "WebP with a huge alpha chunk and lossy bitstream",
    format: "webp",
    build: (size) => webpFile(vp8x(1, 1, 0x10), webpChunk("ALPH", filled(size)), vp8(1, 1)),
    expect: "kept",
  },
  {
    name: "animated WebP with a huge frame",
    format: "webp",
    build: (size) =>
      webpFile(
        vp8x(2, 2, 0x02),
        webpChunk("ANIM", [0, 0, 0, 0, 0, 0]),
        anmf(0, 0, 2, 2, webpChunk("VP8L", join([0x2f, 1, 0x40, 0, 0], filled(size)))),
      ),
    expect: "kept",
  },
  {
    name: "PNG with a huge text chunk",
    format: "png",
    build: (size) =>
      pngFile(ihdr(1, 1), pngChunk("tEXt", join(latin1("Comment\0"), SECRET, filled(size))), ONE_PIXEL_IDAT),
    expect: "dropped",
  },
  {
    name: "PNG with a huge IDAT",
    format: "png",
    build: (size) => pngFile(ihdr(1, 1), ONE_PIXEL_IDAT, pngChunk("IDAT", filled(size))),
    expect: "kept",
  },
  {
    name: "JPEG with many full-size XMP segments and a comment",
    format: "jpeg",
    build: (size) => {
      const xmp = jpegSegment(
        0xe1,
        join(latin1("http://ns.adobe.com/xap/1.0/\0"), SECRET, filled(65533 - 29 - SECRET.length)),
      );
      const count = Math.ceil(size / xmp.length);
      return join(
        SOI,
        ...Array.from({ length: count }, () => xmp),
        jpegSegment(0xfe, join(SECRET, filled(60_000))),
        sof0(1, 1),
        jpegScan(),
        EOI,
      );
    },
    expect: "dropped",
  },
  {
    name: "JPEG with a huge scan",
    format: "jpeg",
    build: (size) => join(SOI, sof0(1, 1), jpegScan(filled(size)), EOI),
    expect: "kept",
  },
  {
    name: "GIF with a huge comment",
    format: "gif",
    build: (size) => join(gifScreen(1, 1), gifComment(join(SECRET, filled(size))), gifImage(0, 0, 1, 1), GIF_TRAILER),
    expect: "dropped",
  },
  {
    name: "MP4 with a huge media data box",
    format: "mp4",
    build: (size) =>
      join(
        box("ftyp", latin1("isom"), [0, 0, 2, 0], latin1("isom")),
        box("mdat", filled(size)),
        box("moov", box("mvhd", new Uint8Array(100))),
      ),
    expect: "kept",
  },
  {
    name: "MP4 with a huge user data box",
    format: "mp4",
    build: (size) =>
      join(
        box("ftyp", latin1("isom"), [0, 0, 2, 0], latin1("isom")),
        box("moov", box("mvhd", new Uint8Array(100)), box("udta", box("\xa9xyz", SECRET), filled(size))),
      ),
    expect: "blanked",
  },
];

describe("streaming strippers hold a bounded amount, whatever a file declares", () => {
  it.each(HUGE)("$name: 8 MiB in 64 KiB pieces", ({ format, build, expect: outcome }) => {
    const file = build(8 * MiB);
    const fed = feed(stripperFor(format)!, file, 64 * 1024);
    expect(fed.maxHeld).toBeLessThanOrEqual(HELD_LIMIT);
    if (outcome === "refused") {
      expect(fed.refused?.message).toMatch(/^Unreadable image data/);
      // Refused from its header, not after receiving what it declared.
      expect(fed.refused!.atByte).toBeLessThanOrEqual(64 * 1024);
      return;
    }
    expect(fed.refused).toBeNull();
    if (outcome === "kept") expect(fed.output.length).toBeGreaterThan(8 * MiB);
    // Left out, or (in video, where offsets must not move) kept in place as zeros.
    if (outcome === "dropped") expect(fed.output.length).toBeLessThan(64 * 1024);
    if (outcome === "blanked") expect(fed.output.length).toBe(file.length);
    if (outcome !== "kept") expect(contains(fed.output, SECRET)).toBe(false);
  });

  /** The quickest of three runs, in ms. */
  const time = (format: Format, file: Uint8Array, piece: number) => {
    let best = Infinity;
    for (let run = 0; run < 3; run++) {
      const start = performance.now();
      feed(stripperFor(format)!, file, piece);
      best = Math.min(best, performance.now() - start);
    }
    return best;
  };

  // Wall-clock bounds with wide margins, so that a busy machine cannot fail them: linear work grows
  // 8x from 1 to 8 MiB where quadratic work grows 64x.
  it.each(HUGE)("$name: eight times the bytes cost about eight times the time", ({ format, build }) => {
    const small = time(format, build(1 * MiB), 16 * 1024);
    const large = time(format, build(8 * MiB), 16 * 1024);
    expect(large).toBeLessThan(20 * small + 100);
  });

  it.each(HUGE)("$name: small pieces cost about what large ones do", ({ format, build }) => {
    const file = build(4 * MiB);
    const large = time(format, file, 64 * 1024);
    const small = time(format, file, 100);
    // Each piece has a fixed cost; what must not happen is re-copying what is held on every push
    // (up to 64 KiB for each of 40,000 pieces: gigabytes).
    expect(small).toBeLessThan(8 * large + 250);
  });
});
