import { describe, expect, it } from "vitest";
import { concatBytes } from "../../../src/bytes";
import { ApiError } from "../../../src/errors";
import { stripperFor } from "../../../src/media/strip";
import { EOI, join, jpegScan, SOI, sof0 } from "../../support/build";
import { fixture } from "../helpers";

/** A JPEG stripper's output for a file split at the given offsets, or the reason it refused it. */
function stripJpeg(file: Uint8Array, cuts: number[] = []) {
  const stripper = stripperFor("jpeg")!;
  const out: Uint8Array[] = [];
  const bounds = [0, ...cuts, file.length];
  try {
    for (let i = 0; i + 1 < bounds.length; i++)
      for (const piece of stripper.push(file.subarray(bounds[i], bounds[i + 1]))) out.push(piece);
    out.push(...stripper.end());
  } catch (error) {
    if (error instanceof ApiError) return error.message;
    throw error;
  }
  return concatBytes(out);
}

/** Compared by hand: large byte arrays make a slow diff. */
const same = (a: Uint8Array | string, b: Uint8Array | string) =>
  typeof a === "string" || typeof b === "string" ? a === b : a.length === b.length && a.every((v, i) => v === b[i]);

describe("JPEG markers across piece boundaries", () => {
  it("takes a file however it is split, its end-of-image marker included", async () => {
    for (const name of ["tiny/jpeg.jpg", "gps/DSCN0010.jpg"]) {
      const file = await fixture(name);
      const whole = stripJpeg(file);
      expect(whole).toBeInstanceOf(Uint8Array);
      for (let cut = Math.max(1, file.length - 300); cut < file.length; cut++) {
        const split = stripJpeg(file, [cut]);
        if (!same(split, whole)) expect(split, `${name} cut at ${cut}`).toEqual(whole);
      }
      const bytewise = stripJpeg(
        file,
        Array.from({ length: file.length - 1 }, (_, i) => i + 1),
      );
      if (!same(bytewise, whole)) expect(bytewise, `${name} byte by byte`).toEqual(whole);
    }
  });

  it("sees a marker after 0xFF fill bytes at the end of a scan", () => {
    const file = join(SOI, sof0(1, 1), jpegScan([0x12, 0x34, 0xff, 0xff, 0xff]), EOI);
    expect(stripJpeg(file)).toEqual(file);
    expect(stripJpeg(file, [file.length - 3])).toEqual(file);
  });
});
