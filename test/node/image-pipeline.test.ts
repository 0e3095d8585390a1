import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { makeGreyJpeg, noise, testFrame } from "../support/media";
import { ffmpeg } from "../support/tools";
import { checkWebp, frames, metadata, rgba, size, tags } from "./inspect";
import { fixturePath, processedUpload, uploadFile, useMediaTestBed } from "./server";

/**
 * Thumbnails and conversions, whichever engine made them (the Worker's codecs or the media
 * service), checked with tools that are not ours (./inspect.ts): sharp decodes, exifreader reads
 * metadata, a RIFF walk and a full decode check WebP structure; npm's ffmpeg makes the inputs.
 */
const bed = useMediaTestBed("image-pipeline");

interface Upload {
  id: string;
  path: string;
  src: string;
  thumb: string | null;
  width: number;
  height: number;
  size: number;
}

/** Uploads a file and resolves the upload once its thumbnail (and any conversion) is done. */
async function uploadProcessed(file: string, fields: Record<string, string> = {}): Promise<Upload> {
  const res = await uploadFile(
    bed.server,
    bed.account.full,
    new Uint8Array(await readFile(file)),
    path.basename(file),
    {
      allow_duplicate: "1",
      ...fields,
    },
  );
  const body = (await res.json()) as { data: Upload };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return processedUpload<Upload>(bed.server, bed.account.full, body.data.id);
}

async function download(url: string, name: string) {
  const file = path.join(bed.dir, name);
  await writeFile(file, new Uint8Array(await (await fetch(url)).arrayBuffer()));
  return file;
}

async function make(name: string, args: string[]) {
  const file = path.join(bed.dir, name);
  await ffmpeg([...args, file]);
  return file;
}

/** Mean absolute difference of the colour channels, 0-255. */
function difference(a: Buffer, b: Buffer) {
  expect(a.length).toBe(b.length);
  let sum = 0;
  for (let i = 0; i < a.length; i++) if (i % 4 !== 3) sum += Math.abs(a[i]! - b[i]!);
  return sum / ((a.length / 4) * 3);
}

describe("thumbnails", () => {
  it("are upright for each of the eight EXIF orientations", async () => {
    for (let n = 1; n <= 8; n++) {
      const original = fixturePath(`orientation/landscape_${n}.jpg`);
      // sharp turns the file upright by its orientation tag: the independent reference.
      const upright = path.join(bed.dir, `upright-${n}.png`);
      await sharp(original, { ignoreIcc: true }).rotate().toFile(upright);
      const upload = await uploadProcessed(original);
      const thumb = await download(upload.thumb!, `thumb-${n}.webp`);
      expect(await size(thumb), `orientation ${n}`).toEqual({ width: 280, height: 210 });
      expect(difference(await rgba(thumb, 56, 42), await rgba(upright, 56, 42)), `orientation ${n}`).toBeLessThan(4);
      expect(metadata(thumb)).toEqual({});
    }
  });

  it.each([
    ["16-bit RGBA PNG", "deep.png", ["-pix_fmt", "rgba64be"]],
    ["palette PNG", "palette.png", ["-pix_fmt", "pal8"]],
    ["grey JPEG", "grey.jpg", []],
    ["lossy WebP", "photo.webp", []],
  ])("look like the image for a %s", async (_kind, name, args) => {
    const source = ["-f", "lavfi", "-i", "testsrc2=size=640x480"];
    const original = path.join(bed.dir, name);
    if (name === "grey.jpg") {
      await makeGreyJpeg(source, original);
      expect(tags(original).file?.["Color Components"]?.value).toBe(1);
    } else await ffmpeg([...source, "-frames:v", "1", ...args, original]);
    const upload = await uploadProcessed(original);
    const thumb = await download(upload.thumb!, `thumb-${name}.webp`);
    expect(await size(thumb)).toEqual({ width: 280, height: 210 });
    expect(difference(await rgba(thumb, 70, 52), await rgba(original, 70, 52))).toBeLessThan(10);
  });

  it("look like the image for a CMYK JPEG (which the media service handles)", async () => {
    const rgb = await make("rgb.png", testFrame("640x480"));
    const cmyk = path.join(bed.dir, "cmyk.jpg");
    await sharp(rgb).toColourspace("cmyk").jpeg().toFile(cmyk);
    expect(tags(cmyk).file?.["Color Components"]?.value).toBe(4);
    const upload = await uploadProcessed(cmyk);
    const thumb = await download(upload.thumb!, "thumb-cmyk.webp");
    expect(await size(thumb)).toEqual({ width: 280, height: 210 });
    // The reference: the CMYK file back in sRGB.
    expect(difference(await rgba(thumb, 70, 52), await rgba(cmyk, 70, 52))).toBeLessThan(12);
  });

  it("are never wider than the image", async () => {
    const small = await make("small.png", testFrame("100x60"));
    const upload = await uploadProcessed(small);
    expect(await size(await download(upload.thumb!, "thumb-small.webp"))).toEqual({ width: 100, height: 60 });
  });
});

describe("conversion to WebP", () => {
  it("turns a 1 MP screenshot over 1 MB into a WebP without metadata that shows the same picture", async () => {
    const original = await make("screenshot.png", [
      ...testFrame("1280x800"),
      ...noise(20),
      "-metadata",
      "comment=GPS 48.8584,2.2945",
    ]);
    const bytes = (await readFile(original)).length;
    expect(bytes).toBeGreaterThan(1024 * 1024);
    const upload = await uploadProcessed(original);
    expect(upload.path).toMatch(/\.webp$/);
    expect(upload).toMatchObject({ width: 1280, height: 800 });
    const webp = await download(upload.src, "screenshot.webp");
    expect(upload.size).toBeLessThan(bytes * 0.9);
    expect(metadata(webp)).toEqual({});
    await checkWebp(webp);
    expect(await size(webp)).toEqual({ width: 1280, height: 800 });
    expect(difference(await rgba(webp, 64, 40), await rgba(original, 64, 40))).toBeLessThan(10);
  });

  /**
   * 16 MP is still far past what the Worker's memory takes (src/media/image/budget.ts): its WebP
   * needs about 400 MiB of the Worker's 100 MiB, its thumbnail nearly 190 MiB, so both go to the
   * media service, as they did at 8000x8000, the size this test used to send. The service's WebP
   * encoding of 64 MP took about 15 s of a core of the suite's time; of 16 MP, a quarter of it.
   */
  it("handles a 4000x4000 photo (the media service: too large for the Worker's memory)", async () => {
    const original = await make("huge.jpg", [...testFrame("4000x4000"), ...noise(6), "-q:v", "2"]);
    const upload = await uploadProcessed(original);
    expect(upload).toMatchObject({ width: 4000, height: 4000 });
    expect(upload.path).toMatch(/\.webp$/);
    expect(await size(await download(upload.src, "huge.webp"))).toEqual({ width: 4000, height: 4000 });
    expect(await size(await download(upload.thumb!, "huge-thumb.webp"))).toEqual({ width: 280, height: 280 });
  });
});

describe("animation", () => {
  it("keeps an animated GIF animated; its thumbnail is the first frame, still", async () => {
    const gif = await make("anim.gif", ["-f", "lavfi", "-i", "testsrc=size=320x240:rate=5:duration=1", "-loop", "0"]);
    const upload = await uploadProcessed(gif);
    expect(upload.path).toMatch(/\.gif$/);
    const served = await download(upload.src, "served.gif");
    expect(await frames(served)).toBe(5);
    const thumb = await download(upload.thumb!, "anim-gif-thumb.webp");
    expect(await checkWebp(thumb)).toEqual({ animated: false, frames: 1 });
    expect(await size(thumb)).toEqual({ width: 280, height: 210 });
    expect(difference(await rgba(thumb, 56, 42), await rgba(gif, 56, 42))).toBeLessThan(12);
  });

  it("keeps an animated WebP animated; its thumbnail is the first frame, still", async () => {
    const webp = await make("anim.webp", [
      "-f",
      "lavfi",
      "-i",
      "testsrc=size=320x240:rate=5:duration=1",
      "-c:v",
      "libwebp_anim",
      "-loop",
      "0",
    ]);
    const upload = await uploadProcessed(webp);
    expect(upload.path).toMatch(/\.webp$/);
    const served = await download(upload.src, "served.webp");
    expect(await checkWebp(served)).toEqual({ animated: true, frames: 5 });
    const thumb = await download(upload.thumb!, "anim-webp-thumb.webp");
    expect(await checkWebp(thumb)).toEqual({ animated: false, frames: 1 });
    expect(await size(thumb)).toEqual({ width: 280, height: 210 });
  });
});
