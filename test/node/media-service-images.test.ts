import { readFile } from "node:fs/promises";
import path from "node:path";
import { deflateSync } from "node:zlib";
import ExifReader from "exifreader";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { ihdr, pngChunk, pngFile } from "../support/build";
import { mediaServiceForTests } from "../support/media-service";
import rootPackage from "../../package.json";
import containerPackage from "../../container/package.json";

/**
 * The media service's image engine on its own (sharp in-process, libheif for HEIC, ffmpeg for
 * BMP), with the npm-shipped ffmpeg. Outputs are checked with sharp and exifreader.
 */
const { job } = mediaServiceForTests("media-images-test-secret-0123456789");

const fixture = (name: string) => readFile(path.join(import.meta.dirname, "../fixtures", name));

/** Every tag exifreader finds beyond the file type itself: EXIF, XMP, ICC, GPS... */
const metadataTags = (bytes: Uint8Array) =>
  Object.keys(ExifReader.load(Buffer.from(bytes))).filter((tag) => tag !== "FileType");

/** A 24-bit bottom-up BMP of the given RGB rows (written here, so the expected pixels are known). */
function bmp(width: number, height: number, pixel: (x: number, y: number) => [number, number, number]): Uint8Array {
  const stride = Math.ceil((width * 3) / 4) * 4;
  const file = Buffer.alloc(54 + stride * height);
  file.write("BM", 0, "latin1");
  file.writeUInt32LE(file.length, 2);
  file.writeUInt32LE(54, 10);
  file.writeUInt32LE(40, 14);
  file.writeInt32LE(width, 18);
  file.writeInt32LE(height, 22);
  file.writeUInt16LE(1, 26);
  file.writeUInt16LE(24, 28);
  file.writeUInt32LE(stride * height, 34);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const [r, g, b] = pixel(x, y);
      const at = 54 + (height - 1 - y) * stride + x * 3;
      file[at] = b;
      file[at + 1] = g;
      file[at + 2] = r;
    }
  }
  return file;
}

/** A PNG whose header declares `width` x `height`, with a few bytes of (insufficient) image data. */
function pngDeclaring(width: number, height: number): Uint8Array {
  return pngFile(ihdr(width, height, 2), pngChunk("IDAT", deflateSync(Buffer.alloc(64))));
}

describe("the media service's image engine", () => {
  it("pins the same sharp and libheif-js as the project root", () => {
    for (const name of ["sharp", "libheif-js"] as const) {
      expect(containerPackage.dependencies[name]).toBe((rootPackage.dependencies as Record<string, string>)[name]);
    }
  });

  it("decodes an iPhone HEIC with libheif: upright WebP and thumbnail, no metadata", async () => {
    const heic = await fixture("heic/IMG_5195.HEIC");
    const webp = await job("/image/webp?quality=82&format=heic", heic);
    expect(webp.status).toBe(200);
    expect(webp.size).toEqual({ width: 2566, height: 3313 });
    const meta = await sharp(webp.bytes).metadata();
    expect([meta.format, meta.width, meta.height, meta.hasAlpha]).toEqual(["webp", 2566, 3313, false]);
    expect(metadataTags(webp.bytes)).toEqual([]);

    const thumb = await job("/image/thumbnail?width=280&format=heic", heic);
    expect(thumb.status).toBe(200);
    expect(thumb.size).toEqual({ width: 280, height: 362 });
    expect(metadataTags(thumb.bytes)).toEqual([]);
  });

  it("decodes BMP through ffmpeg: lossless WebP has exactly the BMP's pixels", async () => {
    const pixel = (x: number, y: number): [number, number, number] => [(x * 37) % 256, (y * 53) % 256, (x * y) % 256];
    const webp = await job("/image/webp?quality=lossless&format=bmp", bmp(33, 17, pixel));
    expect(webp.status).toBe(200);
    expect(webp.size).toEqual({ width: 33, height: 17 });
    const { data, info } = await sharp(webp.bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    expect([info.width, info.height, info.channels]).toEqual([33, 17, 3]);
    const expected = Buffer.alloc(33 * 17 * 3);
    for (let y = 0; y < 17; y++) for (let x = 0; x < 33; x++) expected.set(pixel(x, y), (y * 33 + x) * 3);
    expect(Buffer.compare(data, expected)).toBe(0);
  });

  it("refuses images over 30000 x 30000 px in the decoder (422), whatever the format", async () => {
    const png = await job("/image/thumbnail?width=280&format=png", pngDeclaring(30001, 30001));
    expect(png.status).toBe(422);
    expect(png.error).toMatch(/pixel limit/i);
    const huge = Buffer.from(bmp(1, 1, () => [0, 0, 0]));
    huge.writeInt32LE(40000, 18);
    huge.writeInt32LE(-40000, 22);
    const bitmap = await job("/image/webp?quality=lossless&format=bmp", huge);
    expect(bitmap.status).toBe(422);
    expect(bitmap.error).toMatch(/pixel limit/);
  });

  it("scales a WebP conversion down to WebP's 16383 px side limit", async () => {
    const wide = await sharp({ create: { width: 20000, height: 40, channels: 3, background: "#3a7" } })
      .png()
      .toBuffer();
    const webp = await job("/image/webp?quality=82&format=png", wide);
    expect(webp.status).toBe(200);
    expect(webp.size.width).toBe(16383);
    expect((await sharp(webp.bytes).metadata()).width).toBe(16383);
  });

  it("answers 422 with the decoder's reason for files with no image in them", async () => {
    for (const [name, format] of [
      ["tiny/gif.gif", "gif"],
      ["tiny/pdf.pdf", "png"],
      ["tiny/zip.zip", "jpeg"],
    ] as const) {
      const result = await job(`/image/thumbnail?width=280&format=${format}`, await fixture(name));
      expect(result.status, name).toBe(422);
      expect(result.error, name).toBeTruthy();
    }
  });

  it("turns EXIF orientations upright and drops the EXIF", async () => {
    for (const n of [1, 3, 6, 8]) {
      const thumb = await job(
        "/image/thumbnail?width=280&format=jpeg",
        await fixture(`orientation/landscape_${n}.jpg`),
      );
      expect(thumb.status).toBe(200);
      // landscape_N.jpg all display as 600x450 landscape once upright.
      expect(thumb.size, `orientation ${n}`).toEqual({ width: 280, height: 210 });
      expect(metadataTags(thumb.bytes)).toEqual([]);
    }
  });
});
