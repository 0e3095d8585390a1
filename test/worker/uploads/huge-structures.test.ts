import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ApiError } from "../../../src/errors";
import { stageFile } from "../../../src/uploads/intake/staged-file";
import {
  box,
  EOI,
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
  vp8l,
  vp8x,
  VP8X_EXIF,
  webpChunk,
  webpFile,
} from "../../support/build";
import { contains } from "../../support/boxes";
import { DEAD_SERVICE, newAccount, upload, request, bytesOf, storedSince } from "../helpers";

const MiB = 1024 * 1024;
const SECRET = latin1("GPS 48.8584 2.2945");

/** Uploads with the media job kept out of the way, and returns the stored bytes as served. */
async function storedAfterUpload(file: Uint8Array) {
  const account = await newAccount();
  const app = { bindings: { MEDIA_SERVICE_URL: DEAD_SERVICE } };
  const data = (await upload(account.full, file, {}, { app })).body.data;
  const { bytes } = await bytesOf(request(data.src));
  const object = await env.FILES.head(new URL(data.path).pathname.replace("/f/", "uploads/"));
  // What the upload reports and what R2 holds are the bytes written.
  expect(data.size).toBe(bytes.length);
  expect(object?.size).toBe(bytes.length);
  return { data, bytes };
}

describe("uploads declaring huge structures", () => {
  it("refuses a WebP whose VP8X chunk declares 20 MiB, from its header, storing nothing", async () => {
    const account = await newAccount();
    const file = webpFile(
      webpChunk("VP8X", join([0, 0, 0, 0, 0, 0, 0, 0, 0, 0], new Uint8Array(20 * MiB - 10))),
      vp8l(1, 1),
    );
    const start = Date.now();
    const res = await upload(account.full, file);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      type: "error",
      errors: `Unreadable image data (webp): a VP8X chunk of ${20 * MiB} bytes.`,
    });
    expect(Date.now() - start).toBeLessThan(5_000);
    expect(await storedSince(start, account)).toEqual([]);
  });

  it("stores a WebP with an 8 MiB EXIF chunk without it, its RIFF size and flags right", async () => {
    const file = webpFile(vp8x(1, 1, VP8X_EXIF), vp8l(1, 1), webpChunk("EXIF", join(SECRET, new Uint8Array(8 * MiB))));
    const { bytes } = await storedAfterUpload(file);
    expect(bytes).toEqual(webpFile(vp8x(1, 1), vp8l(1, 1)));
  });

  it("stores a PNG with an 8 MiB text chunk without it", async () => {
    const file = pngFile(
      ihdr(1, 1),
      pngChunk("tEXt", join(latin1("Comment\0"), SECRET, new Uint8Array(8 * MiB))),
      ONE_PIXEL_IDAT,
    );
    const { bytes } = await storedAfterUpload(file);
    expect(bytes).toEqual(pngFile(ihdr(1, 1), ONE_PIXEL_IDAT));
  });

  it("refuses a PNG whose 8 MiB text chunk has a wrong checksum", async () => {
    const account = await newAccount();
    const file = pngFile(
      ihdr(1, 1),
      pngChunk("tEXt", join(latin1("Comment\0"), new Uint8Array(8 * MiB))),
      ONE_PIXEL_IDAT,
    );
    file[33 + 8 + 100]! ^= 1; // in the text, after its CRC was computed
    const since = Date.now();
    const res = await upload(account.full, file);
    expect(res.status).toBe(422);
    expect(res.body.errors).toBe("Unreadable image data (png): checksum mismatch in tEXt.");
    expect(await storedSince(since, account)).toEqual([]);
  });

  it("stores a JPEG with 8 MiB of XMP segments after its frame header without them; refuses them before it", async () => {
    const xmp = jpegSegment(0xe1, join(latin1("http://ns.adobe.com/xap/1.0/\0"), SECRET, new Uint8Array(65_000)));
    const segments = Array.from({ length: Math.ceil((8 * MiB) / xmp.length) }, () => xmp);
    const scan = join(jpegScan(), EOI);
    const { bytes } = await storedAfterUpload(join(SOI, sof0(1, 1), ...segments, scan));
    expect(bytes).toEqual(join(SOI, sof0(1, 1), scan));

    // The size must be in the first MiB, which is all the header reader looks at.
    const res = await upload((await newAccount()).full, join(SOI, ...segments, sof0(1, 1), scan));
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ type: "error", errors: "Unreadable image data (jpg): no image size in the first MB." });
  });

  it("stores an MP4 with an 8 MiB user data box as a free box of zeros, the same size", async () => {
    const ftyp = box("ftyp", latin1("isom"), [0, 0, 2, 0], latin1("isom"));
    const mvhd = box("mvhd", new Uint8Array(100));
    const file = join(ftyp, box("moov", mvhd, box("udta", box("\xa9xyz", SECRET), new Uint8Array(8 * MiB))));
    const { bytes } = await storedAfterUpload(file);
    expect(bytes.length).toBe(file.length);
    expect(contains(bytes, SECRET)).toBe(false);
    const udta = ftyp.length + 8 + mvhd.length;
    expect(new TextDecoder().decode(bytes.subarray(udta + 4, udta + 8))).toBe("free");
  });
});

describe("the header reader's bound", () => {
  const once = async function* (bytes: Uint8Array) {
    yield bytes;
  };

  /** A file delivered whole, or as a network might split it. */
  const DELIVERIES = [
    ["in one piece", (b: Uint8Array) => once(b)],
    [
      "in 4 KiB pieces",
      async function* (b: Uint8Array) {
        for (let at = 0; at < b.length; at += 4096) yield b.subarray(at, at + 4096);
      },
    ],
  ] as const;

  it.each(DELIVERIES)("refuses an image whose size is past the first MiB, %s", async (_how, pieces) => {
    const filler = Array.from({ length: 17 }, () => jpegSegment(0xe1, new Uint8Array(65_000)));
    const jpeg = join(SOI, ...filler, sof0(1, 1), jpegScan(), EOI);
    const since = Date.now();
    const error = await stageFile(env.FILES, "headerbound", pieces(jpeg)).catch((e) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect([error.status, error.message]).toEqual([422, "Unreadable image data (jpg): no image size in the first MB."]);
    expect(await storedSince(since)).toEqual([]);
  });

  it.each(DELIVERIES)(
    "takes a TIFF whose second page is past the first MiB at its first page's size, %s",
    async (_how, pieces) => {
      // libtiff writes each page's directory after its image data: later pages may lie anywhere.
      const little = true;
      const first = tiffIfd(
        little,
        [
          [256, 4, 3],
          [257, 4, 2],
          [0x111, 4, 0],
        ],
        2 * MiB,
      );
      const second = tiffIfd(little, [
        [256, 4, 40_000],
        [257, 4, 40_000],
        [0x111, 4, 0],
      ]);
      const head = join(tiffHeader(true), first);
      const tiff = join(head, new Uint8Array(2 * MiB - head.length), second);
      const file = await stageFile(env.FILES, "headerbound", pieces(tiff));
      expect(file?.image).toMatchObject({ width: 3, height: 2 });
    },
  );

  it("refuses a TIFF whose first directory is past the first MiB", async () => {
    const head = tiffHeader(true, 2 * MiB);
    const tiff = join(
      head,
      new Uint8Array(2 * MiB - head.length),
      tiffIfd(true, [
        [256, 4, 1],
        [257, 4, 1],
        [0x111, 4, 0],
      ]),
    );
    const error = await stageFile(env.FILES, "headerbound", once(tiff)).catch((e) => e);
    expect([error.status, error.message]).toEqual([422, "Unreadable image data (tif): no image size in the first MB."]);
  });

  it("reads a header near the bound in small pieces at about the cost of one piece", async () => {
    const filler = Array.from({ length: 15 }, () => jpegSegment(0xe1, new Uint8Array(65_000)));
    const jpeg = join(SOI, ...filler, sof0(1, 1), jpegScan(), EOI);
    const timed = async (pieces: AsyncIterable<Uint8Array>) => {
      const start = performance.now();
      const file = await stageFile(env.FILES, "headerbound", pieces);
      expect(file?.image).toMatchObject({ width: 1, height: 1 });
      return performance.now() - start;
    };
    const whole = await timed(once(jpeg));
    const small = await timed(
      (async function* () {
        for (let at = 0; at < jpeg.length; at += 64) yield jpeg.subarray(at, at + 64);
      })(),
    );
    // Joining the whole head again on every piece would make this quadratic in the header size.
    expect(small).toBeLessThan(10 * whole + 400);
  });
});
