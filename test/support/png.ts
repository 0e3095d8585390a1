// PNGs of a chosen size, for the tests (in Node and in workerd) and the benchmarks: Node runs this
// file as it is, so it keeps to plain TypeScript and imports with extensions.
import { crc32 } from "../../src/media/strip/crc32.ts";
import { ihdr, latin1, pngFile } from "./build.ts";

/** What a PNG holds besides its IDAT's data: signature, IHDR, the IDAT's framing, IEND. */
export const PNG_OVERHEAD = 8 + 25 + 12 + 12;

/**
 * A PNG of exactly `total` bytes: a 1x1 RGBA header and one IDAT of what `fill` writes into it.
 * Uploads check a PNG's chunks (their CRCs) and never inflate its pixels, so the size costs no
 * decoding. The IDAT is written in place: some of these files are 200 MiB.
 */
export function sizedPng(total: number, fill: (data: Uint8Array) => void): Uint8Array {
  const frame = pngFile(ihdr(1, 1)); // signature, IHDR, IEND
  const at = frame.length - 12;
  const length = total - PNG_OVERHEAD;
  const png = new Uint8Array(total);
  const view = new DataView(png.buffer);
  png.set(frame.subarray(0, at));
  view.setUint32(at, length);
  png.set(latin1("IDAT"), at + 4);
  fill(png.subarray(at + 8, at + 8 + length));
  view.setUint32(at + 8 + length, crc32(png.subarray(at + 4, at + 8 + length)));
  png.set(frame.subarray(at), at + 12 + length);
  return png;
}
