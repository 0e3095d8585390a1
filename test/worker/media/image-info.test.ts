import { describe, expect, it } from "vitest";
import { readImageHeader } from "../../../src/media/image-header";
import { animationKnown, isAnimated } from "../../../src/media/image-info";
import { sniff } from "../../../src/media/sniff";
import {
  actl,
  fctl,
  ihdr,
  join,
  latin1,
  ONE_PIXEL_IDAT,
  pngChunk,
  pngFile,
  tiffHeader,
  tiffIfd,
  tiffOfManySubIfds,
  u16be,
  u32be,
  VP8X_ANIMATION,
  VP8X_EXIF,
  vp8x,
  webpFile,
} from "../../support/build";
import { fixture } from "../helpers";

async function header(path: string, limit?: number) {
  const bytes = await fixture(path);
  const format = sniff(bytes)!.format;
  return readImageHeader(format, limit ? bytes.subarray(0, limit) : bytes, !limit);
}

describe("readImageHeader", () => {
  // Sizes and orientations as exiftool reports them for these files.
  it.each([
    ["orientation/landscape_1.jpg", 600, 450, 1],
    ["orientation/landscape_2.jpg", 600, 450, 2],
    ["orientation/landscape_3.jpg", 600, 450, 3],
    ["orientation/landscape_4.jpg", 600, 450, 4],
    ["orientation/landscape_5.jpg", 600, 450, 5],
    ["orientation/landscape_6.jpg", 600, 450, 6],
    ["orientation/landscape_7.jpg", 600, 450, 7],
    ["orientation/landscape_8.jpg", 600, 450, 8],
    ["gps/DSCN0010.jpg", 640, 480, 1],
    ["heic/IMG_5195.HEIC", 2566, 3313, 1],
    ["heic/samplefilehub.heif", 640, 426, 1],
    ["tiny/heif.heif", 64, 64, 1],
    ["tiny/jpeg.jpg", 1, 1, 1],
    ["tiny/png-transparent.png", 1, 1, 1],
    ["tiny/gif.gif", 1, 1, 1],
    ["tiny/webp.webp", 11330, 446, 1],
    ["tiny/bmp.bmp", 1, 1, 1],
    ["tiny/tiff.tif", 1, 1, 1],
    ["pngsuite/basn0g01.png", 32, 32, 1],
  ])("reads %s as %i x %i upright, orientation %i", async (path, width, height, orientation) => {
    expect(await header(path)).toMatchObject({ width, height, orientation });
  });

  it("swaps the stored axes for orientations 5 to 8", async () => {
    expect(await header("orientation/landscape_6.jpg")).toEqual({
      width: 600,
      height: 450,
      storedWidth: 450,
      storedHeight: 600,
      orientation: 6,
      jpegFrame: { bits: 8, components: 3 },
    });
  });

  it("asks for more bytes when the header is cut short, and calls broken headers invalid", async () => {
    expect(await header("gps/DSCN0010.jpg", 100)).toEqual({ need: "more" });
    expect(await header("tiny/png-transparent.png", 20)).toEqual({ need: "more" });
    const broken = await fixture("gps/DSCN0010.jpg");
    const copy = broken.slice();
    copy[2] = 0x00; // no marker where one must be
    expect(readImageHeader("jpeg", copy)).toHaveProperty("invalid");
    const zero = (await fixture("tiny/png-transparent.png")).slice();
    zero.fill(0, 16, 24);
    expect(readImageHeader("png", zero)).toHaveProperty("invalid");
  });

  it("reads the HEIF rotation (irot) as an orientation", () => {
    // meta{pitm(1), iprp{ipco{ispe 400x300, irot 1}, ipma(1 -> 1,2)}}
    const box = (type: string, ...parts: Uint8Array[]) => {
      const body = parts.reduce((n, p) => n + p.length, 0);
      const out = new Uint8Array(8 + body);
      new DataView(out.buffer).setUint32(0, 8 + body);
      out.set(new TextEncoder().encode(type), 4);
      let at = 8;
      for (const p of parts) {
        out.set(p, at);
        at += p.length;
      }
      return out;
    };
    const u32 = (...v: number[]) =>
      new Uint8Array(v.flatMap((x) => [x >>> 24, (x >>> 16) & 255, (x >>> 8) & 255, x & 255]));
    const ispe = box("ispe", u32(0, 400, 300));
    const irot = box("irot", new Uint8Array([1]));
    const ipma = box("ipma", u32(0, 1), new Uint8Array([0, 1, 2, 0x81, 0x82]));
    const meta = box(
      "meta",
      u32(0),
      box("pitm", u32(0), new Uint8Array([0, 1])),
      box("iprp", box("ipco", ispe, irot), ipma),
    );
    const ftyp = box("ftyp", new TextEncoder().encode("heicmif1"));
    const file = new Uint8Array([...ftyp, ...meta]);
    expect(readImageHeader("heic", file)).toEqual({
      width: 300,
      height: 400,
      storedWidth: 400,
      storedHeight: 300,
      orientation: 8,
    });
  });

  describe("TIFF", () => {
    const page = (little: boolean, width: number, height: number, next: number) =>
      tiffIfd(
        little,
        [
          [256, 4, width],
          [257, 3, height],
          [0x0112, 3, 6],
        ],
        next,
      );
    const pages = (little: boolean) =>
      join(
        tiffHeader(little),
        page(little, 300, 200, 8 + 42),
        page(little, 40_000, 10, 8 + 84),
        page(little, 500, 500, 0),
      );

    it.each([true, false])(
      "reads every directory (little-endian: %s): the first gives the size, the largest is reported",
      (little) => {
        expect(readImageHeader("tiff", pages(little), true)).toEqual({
          width: 200,
          height: 300,
          storedWidth: 300,
          storedHeight: 200,
          orientation: 6,
          largest: { width: 40_000, height: 10 },
        });
      },
    );

    it("waits for a directory (or the offset of the next) past the bytes it has, unless they are the whole file", async () => {
      expect(readImageHeader("tiff", pages(true).subarray(0, 100))).toEqual({ need: "more" });
      // 46 bytes: one directory, and the file ends where the next-directory offset would be.
      const tiny = await fixture("tiny/tiff.tif");
      expect(readImageHeader("tiff", tiny)).toEqual({ need: "more" });
      expect(readImageHeader("tiff", tiny, true)).toMatchObject({ width: 1, height: 1 });
    });

    it.each(["II", "MM"])("calls a BigTIFF (%s) unsupported", (order) => {
      const little = order === "II";
      const bigtiff = join(
        latin1(order),
        little ? [43, 0, 8, 0, 0, 0] : [0, 43, 0, 8, 0, 0],
        new Uint8Array(8),
        page(little, 1, 1, 0),
      );
      expect(readImageHeader("tiff", bigtiff, true)).toEqual({ invalid: "BigTIFF is not supported" });
    });

    it("refuses directories that loop or overlap rather than reading them again", () => {
      const header = tiffHeader(false);
      const loop = join(header, page(false, 1, 1, 8));
      expect(readImageHeader("tiff", loop, true)).toMatchObject({ width: 1, height: 1 });
      // Sub-directories one byte apart over the same 50 KB of entries: each would read them all again.
      const region = new Uint8Array(50_000).fill(0x10);
      const offsets = Array.from({ length: 200 }, (_, i) => 3000 + i);
      const subIfds = join(u16be(1), u16be(330), u16be(4), u32be(offsets.length), u32be(1000), u32be(0));
      const overlapping = join(
        header,
        subIfds,
        new Uint8Array(1000 - 8 - subIfds.length),
        offsets.flatMap((o) => u32be(o)),
        new Uint8Array(3000 - 1000 - 4 * offsets.length),
        region,
      );
      expect(readImageHeader("tiff", overlapping, true)).toEqual({ invalid: "TIFF directories overlap" });
    });

    it("refuses many SubIFDs entries of zero offsets quickly rather than queueing them all", () => {
      // 2000 SubIFDs entries (tag 330), each listing the same 256 offsets of 0.
      const file = tiffOfManySubIfds(2000);
      const start = performance.now();
      expect(readImageHeader("tiff", file, true)).toEqual({ invalid: "a TIFF of more than 256 directories" });
      expect(performance.now() - start).toBeLessThan(1000);
    });

    it("reads the first directory and stops at a later one past the first MiB", () => {
      const header = tiffHeader(true);
      const file = join(header, page(true, 300, 200, 2 * 1024 * 1024), page(true, 40_000, 40_000, 0));
      const first = { width: 200, height: 300, storedWidth: 300, storedHeight: 200, orientation: 6 };
      // Given only the first bytes of a longer file: the later page is out of reach.
      const head = new Uint8Array(1024 * 1024);
      head.set(file);
      expect(readImageHeader("tiff", head)).toEqual(first);
      // Fewer bytes than the first MiB: the page may yet arrive.
      expect(readImageHeader("tiff", head.subarray(0, 64 * 1024))).toEqual({ need: "more" });
      // A sub-directory out of reach is not followed either.
      const subIfd = tiffIfd(true, [
        [256, 4, 300],
        [257, 4, 200],
        [330, 4, 3 * 1024 * 1024],
      ]);
      const withSub = new Uint8Array(1024 * 1024);
      withSub.set(join(header, subIfd));
      expect(readImageHeader("tiff", withSub)).toEqual({
        width: 300,
        height: 200,
        storedWidth: 300,
        storedHeight: 200,
        orientation: 1,
      });
      // The first directory itself must still be within the bytes given.
      const late = new Uint8Array(1024 * 1024);
      late.set(tiffHeader(true, 2 * 1024 * 1024));
      expect(readImageHeader("tiff", late)).toEqual({ need: "more" });
    });
  });
});

describe("animation, from the file's first bytes", () => {
  const still = pngFile(ihdr(1, 1), ONE_PIXEL_IDAT);
  const apng = (...before: Uint8Array[]) => pngFile(ihdr(1, 1), ...before, actl(1), fctl(0, 1, 1), ONE_PIXEL_IDAT);

  it("takes a PNG as animated by an acTL chunk before its image data, however large the chunks before it", () => {
    expect(isAnimated("png", still)).toBe(false);
    expect(isAnimated("png", apng())).toBe(true);
    expect(isAnimated("png", apng(pngChunk("iCCP", new Uint8Array(300_000))))).toBe(true);
    // An acTL after the image data is not an APNG's.
    expect(isAnimated("png", pngFile(ihdr(1, 1), ONE_PIXEL_IDAT, actl(1)))).toBe(false);
  });

  it("reads a PNG's chunks, not its bytes: the word acTL in a text chunk is not animation", () => {
    const text = pngChunk("tEXt", latin1("Comment\0made with acTL and IDAT in mind"));
    expect(isAnimated("png", pngFile(ihdr(1, 1), text, ONE_PIXEL_IDAT))).toBe(false);
    expect(animationKnown("png", pngFile(ihdr(1, 1), text).subarray(0, -12))).toBe(false);
  });

  it("waits for a PNG's head to reach acTL or IDAT before it tells, and no longer than its limit", () => {
    const file = apng(pngChunk("iCCP", new Uint8Array(300_000)));
    const acTlAt = 8 + 25 + 12 + 300_000;
    expect(animationKnown("png", file.subarray(0, acTlAt))).toBe(false);
    expect(animationKnown("png", file.subarray(0, acTlAt + 8))).toBe(true);
    // A head of 1 MiB without either is taken as a still image.
    const long = pngFile(ihdr(1, 1), pngChunk("iCCP", new Uint8Array(2 * 1024 * 1024)));
    expect(animationKnown("png", long.subarray(0, 1024 * 1024))).toBe(true);
    expect(isAnimated("png", long)).toBe(false);
    expect(animationKnown("jpg", new Uint8Array(2))).toBe(true);
  });

  it("takes a WebP as animated by its VP8X flag alone", () => {
    expect(isAnimated("webp", webpFile(vp8x(1, 1, VP8X_ANIMATION)))).toBe(true);
    expect(isAnimated("webp", webpFile(vp8x(1, 1, VP8X_EXIF)))).toBe(false);
    expect(isAnimated("gif", new Uint8Array(0))).toBe(true);
    expect(isAnimated("jpg", new Uint8Array(0))).toBe(false);
  });
});
