import { describe, expect, it } from "vitest";
import {
  actl,
  anmf,
  box,
  EOI,
  fctl,
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
  tiffHeader,
  tiffIfd,
  tiffOfManySubIfds,
  u16be,
  u16le,
  u32be,
  u32le,
  vp8l,
  vp8x,
  VP8X_ANIMATION,
  webpChunk,
  webpFile,
} from "../../support/build";
import { newAccount, storedSince, upload } from "../helpers";

/** An RGBA PNG whose header claims a size; its image data is real only when `pixels` is set. */
async function png(width: number, height: number, pixels = false) {
  let data = new Uint8Array([0]);
  if (pixels) {
    const raw = new Blob([new Uint8Array((1 + width * 4) * height)])
      .stream()
      .pipeThrough(new CompressionStream("deflate"));
    data = new Uint8Array(await new Response(raw).arrayBuffer());
  }
  return pngFile(ihdr(width, height), pngChunk("IDAT", data));
}

const jpeg = (width: number, height: number) => join(SOI, sof0(width, height), EOI);
const gif = (width: number, height: number) => join(gifScreen(width, height), GIF_TRAILER);
const webp = (width: number, height: number) => webpFile(vp8x(width, height));

describe("image dimensions", () => {
  it.each([
    ["PNG", png],
    ["JPEG", jpeg],
    ["GIF", gif],
    ["WebP", webp],
  ] as const)("refuses a %s over 30000 px on either side from its header, storing nothing", async (_name, make) => {
    const account = await newAccount();
    const since = Date.now();
    for (const [width, height] of [
      [30_001, 10],
      [10, 30_001],
      [65_535, 65_535],
    ] as const) {
      const res = await upload(account.full, await make(width, height), { allow_duplicate: "1" });
      expect(res.status, `${width}x${height}`).toBe(422);
      expect(res.body).toEqual({
        type: "error",
        errors: `Image dimensions ${width}x${height} are over the 30000x30000 px limit.`,
      });
    }
    expect(await storedSince(since, account)).toEqual([]);
  });

  it("takes exactly 30000 px", async () => {
    const account = await newAccount();
    const res = await upload(account.full, await png(30_000, 1, true));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ width: 30_000, height: 1 });
  });
});

/** A classic TIFF: header, then the given directories one after another, each pointing to the next. */
function tiffFile(little: boolean, pages: [width: number, height: number][]) {
  const header = tiffHeader(little);
  const size = (n: number) => 2 + n * 12 + 4;
  let at = 8;
  const ifds = pages.map(([w, h], i) => {
    const next = i + 1 < pages.length ? at + size(3) : 0;
    const ifd = tiffIfd(
      little,
      [
        [256, 4, w],
        [257, 4, h],
        [0x111, 4, 0],
      ],
      next,
    );
    at += ifd.length;
    return ifd;
  });
  return join(header, ...ifds);
}

/** A HEIF whose primary item is 1x1 and a second item (a hidden image, say) the given size. */
function heifWithSecondItem(width: number, height: number) {
  const full = (type: string, ...parts: (Uint8Array | number[])[]) => box(type, [0, 0, 0, 0], ...parts);
  const ipma = full("ipma", u32be(2), [0, 1, 1, 0x81], [0, 2, 1, 0x82]);
  const iprp = box(
    "iprp",
    box("ipco", full("ispe", u32be(1), u32be(1)), full("ispe", u32be(width), u32be(height))),
    ipma,
  );
  return join(box("ftyp", latin1("heic"), u32be(0), latin1("mif1heic")), full("meta", full("pitm", [0, 1]), iprp));
}

describe("every declared size, not only the first", () => {
  const refused = async (file: Uint8Array, errors: string | RegExp) => {
    const account = await newAccount();
    const since = Date.now();
    const res = await upload(account.full, file, { allow_duplicate: "1" });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body.type).toBe("error");
    if (typeof errors === "string") expect(res.body.errors).toBe(errors);
    else expect(res.body.errors).toMatch(errors);
    expect(await storedSince(since, account)).toEqual([]);
  };
  const over = (width: number, height: number) =>
    `Image dimensions ${width}x${height} are over the 30000x30000 px limit.`;

  it("refuses a big-endian BigTIFF, whatever a classic directory at its would-be offset says", async () => {
    // MM\0+: offsets are 8 bytes, the first directory at 16 declares 10^6 x 10^6. Read as a
    // classic TIFF, bytes 4-7 (0x00080000) point to a decoy directory declaring 1x1.
    const entry = (tag: number, value: number) =>
      join(u16be(tag), u16be(4), u32be(0), u32be(1), u32be(0), u32be(value));
    const real = join(
      u32be(0),
      u32be(3),
      entry(256, 1_000_000),
      entry(257, 1_000_000),
      entry(0x111, 0),
      u32be(0),
      u32be(0),
    );
    const head = join(latin1("MM"), [0, 43], u16be(8), u16be(0), u32be(0), u32be(16), real);
    const decoy = tiffIfd(false, [
      [256, 4, 1],
      [257, 4, 1],
      [0x111, 4, 0],
    ]);
    await refused(
      join(head, new Uint8Array(0x80000 - head.length), decoy),
      "Unreadable image data (tif): BigTIFF is not supported.",
    );
  });

  it("refuses a GIF whose logical screen is 1x1 but whose frame is 30001x30001", async () => {
    await refused(join(gifScreen(1, 1), gifImage(0, 0, 30_001, 30_001), GIF_TRAILER), over(30_001, 30_001));
  });

  it("refuses a GIF whose later frame reaches past 30000 px", async () => {
    const frames = join(gifImage(0, 0, 1, 1), gifImage(0, 0, 1, 1), gifImage(29_999, 0, 2, 1));
    await refused(join(gifScreen(1, 1), frames, GIF_TRAILER), over(30_001, 1));
  });

  it("refuses a JPEG whose second frame header is over the limit", async () => {
    await refused(join(SOI, sof0(1, 1), jpegScan(), sof0(40_000, 2), jpegScan(), EOI), over(40_000, 2));
  });

  it("refuses a JPEG whose frame header comes after a 64 KiB segment", async () => {
    await refused(join(SOI, jpegSegment(0xe1, new Uint8Array(65_000)), sof0(2, 40_000), EOI), over(2, 40_000));
  });

  it("refuses a PNG with a second IHDR, or an animation frame larger than its image", async () => {
    await refused(
      pngFile(ihdr(1, 1), ihdr(40_000, 40_000), ONE_PIXEL_IDAT),
      "Unreadable image data (png): a second IHDR.",
    );
    await refused(
      pngFile(ihdr(1, 1), actl(1), fctl(0, 40_000, 40_000), ONE_PIXEL_IDAT),
      /animation frame of 40000x40000 at 0,0 outside the 1x1 image/,
    );
  });

  it("refuses an animated WebP whose frame is over the limit, or outside its canvas", async () => {
    const animated = (frame: Uint8Array) =>
      webpFile(vp8x(2, 2, VP8X_ANIMATION), webpChunk("ANIM", [0, 0, 0, 0, 0, 0]), frame);
    await refused(animated(anmf(0, 0, 40_000, 2, vp8l(2, 2))), over(40_000, 2));
    await refused(animated(anmf(0, 0, 4, 2, vp8l(2, 2))), /animation frame of 4x2 at 0,0 outside the 2x2 canvas/);
  });

  it("refuses a WebP whose VP8X chunk is not 10 bytes", async () => {
    await refused(
      webpFile(webpChunk("VP8X", new Uint8Array(12)), vp8l(1, 1)),
      "Unreadable image data (webp): a VP8X chunk of 12 bytes.",
    );
  });

  it.each([true, false])("refuses a TIFF (little-endian: %s) whose second page is over the limit", async (little) => {
    await refused(
      tiffFile(little, [
        [1, 1],
        [40_000, 3],
      ]),
      over(40_000, 3),
    );
  });

  it("refuses a TIFF listing thousands of SubIFDs entries, quickly", async () => {
    const start = performance.now();
    await refused(tiffOfManySubIfds(2000), "Unreadable image data (tif): a TIFF of more than 256 directories.");
    expect(performance.now() - start).toBeLessThan(2000);
  });

  it("refuses a HEIF whose primary item is small but another item is over the limit", async () => {
    await refused(heifWithSecondItem(40_000, 40_000), over(40_000, 40_000));
  });

  it.each([
    [-40_000, 40_000],
    [40_000, 40_000],
    [-2_147_483_648, 2_147_483_648],
  ])("refuses a BMP of height %i", async (height, reported) => {
    const bmp = join(
      latin1("BM"),
      u32le(54),
      u32le(0),
      u32le(54),
      u32le(40),
      u32le(1),
      u32le(height >>> 0),
      u16le(1),
      u16le(24),
      new Uint8Array(24),
      [0, 0, 0, 0],
    );
    await refused(bmp, over(1, reported));
  });
});
