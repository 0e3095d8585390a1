import { execFileSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  fixturePath,
  processedUpload,
  startWithMediaService,
  uploadFile,
  type MediaTestBed,
  type TestAccount,
  type TestServer,
} from "./server";

/**
 * Thumbnails and conversions, whichever engine made them (the Worker's codecs or the media
 * service), checked with tools that are not ours: ffmpeg and libvips decode, exiftool reads
 * metadata, webpinfo reads WebP structure.
 */
let bed: MediaTestBed;
let server: TestServer;
let account: TestAccount;
let dir: string;

beforeAll(async () => {
  bed = await startWithMediaService("image-pipeline");
  ({ server, account, dir } = bed);
});

afterAll(() => bed?.stop());

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
  const res = await uploadFile(server, account.full, new Uint8Array(await readFile(file)), path.basename(file), { allow_duplicate: "1", ...fields });
  const body = (await res.json()) as { data: Upload };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return processedUpload<Upload>(server, account.full, body.data.id);
}

async function download(url: string, name: string) {
  const file = path.join(dir, name);
  await writeFile(file, new Uint8Array(await (await fetch(url)).arrayBuffer()));
  return file;
}

const run = (tool: string, args: string[]) => execFileSync(tool, args, { encoding: "utf8", maxBuffer: 1 << 28 });

function make(name: string, args: string[]) {
  const file = path.join(dir, name);
  execFileSync("ffmpeg", ["-v", "error", "-y", ...args, file]);
  return file;
}

/** Width and height as ffprobe reads them. */
function size(file: string) {
  const [width, height] = run("ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", file]).trim().split(",").map(Number);
  return { width, height };
}

/** RGBA pixels decoded by ffmpeg, scaled to width x height. */
function rgba(file: string, width: number, height: number) {
  return execFileSync("ffmpeg", ["-v", "error", "-i", file, "-frames:v", "1", "-vf", `scale=${width}:${height}:flags=area`, "-f", "rawvideo", "-pix_fmt", "rgba", "-"], {
    maxBuffer: 1 << 28,
  });
}

/** Mean absolute difference of the colour channels, 0-255. */
function difference(a: Buffer, b: Buffer) {
  expect(a.length).toBe(b.length);
  let sum = 0;
  for (let i = 0; i < a.length; i++) if (i % 4 !== 3) sum += Math.abs(a[i]! - b[i]!);
  return sum / ((a.length / 4) * 3);
}

/** exiftool's tags beyond what describes the file itself. */
function metadata(file: string): string[] {
  const [tags] = JSON.parse(run("exiftool", ["-j", "-a", "-G1", "-s", file]));
  return Object.keys(tags).filter((k) => !/^(SourceFile$|(ExifTool|System|File|Composite|RIFF|VP8|VP8L|VP8X):)/.test(k));
}

describe("thumbnails", () => {
  it("are upright for each of the eight EXIF orientations", async () => {
    for (let n = 1; n <= 8; n++) {
      const original = fixturePath(`orientation/landscape_${n}.jpg`);
      // libvips turns the file upright by its orientation tag: the independent reference.
      const upright = path.join(dir, `upright-${n}.png`);
      run("vips", ["autorot", original, upright]);
      const upload = await uploadProcessed(original);
      const thumb = await download(upload.thumb!, `thumb-${n}.webp`);
      expect(size(thumb), `orientation ${n}`).toEqual({ width: 280, height: 210 });
      expect(difference(rgba(thumb, 56, 42), rgba(upright, 56, 42)), `orientation ${n}`).toBeLessThan(4);
      expect(metadata(thumb)).toEqual([]);
    }
  });

  it.each([
    ["16-bit RGBA PNG", "deep.png", ["-f", "lavfi", "-i", "testsrc2=size=640x480", "-frames:v", "1", "-pix_fmt", "rgba64be"]],
    ["palette PNG", "palette.png", ["-f", "lavfi", "-i", "testsrc2=size=640x480", "-frames:v", "1", "-pix_fmt", "pal8"]],
    ["grey JPEG", "grey.jpg", ["-f", "lavfi", "-i", "testsrc2=size=640x480", "-frames:v", "1", "-pix_fmt", "gray"]],
    ["lossy WebP", "photo.webp", ["-f", "lavfi", "-i", "testsrc2=size=640x480", "-frames:v", "1"]],
  ])("look like the image for a %s", async (_kind, name, args) => {
    const original = make(name, args as string[]);
    const upload = await uploadProcessed(original);
    const thumb = await download(upload.thumb!, `thumb-${name}.webp`);
    expect(size(thumb)).toEqual({ width: 280, height: 210 });
    expect(difference(rgba(thumb, 70, 52), rgba(original, 70, 52))).toBeLessThan(10);
  });

  it("look like the image for a CMYK JPEG (which the media service handles)", async () => {
    const rgb = make("rgb.png", ["-f", "lavfi", "-i", "testsrc2=size=640x480", "-frames:v", "1"]);
    const cmyk = path.join(dir, "cmyk.jpg");
    run("vips", ["colourspace", rgb, cmyk, "cmyk"]);
    expect(run("exiftool", ["-s3", "-ColorComponents", cmyk]).trim()).toBe("4");
    const upload = await uploadProcessed(cmyk);
    const thumb = await download(upload.thumb!, "thumb-cmyk.webp");
    expect(size(thumb)).toEqual({ width: 280, height: 210 });
    const reference = path.join(dir, "cmyk-reference.png");
    run("vips", ["colourspace", cmyk, reference, "srgb"]);
    expect(difference(rgba(thumb, 70, 52), rgba(reference, 70, 52))).toBeLessThan(12);
  });

  it("are never wider than the image", async () => {
    const small = make("small.png", ["-f", "lavfi", "-i", "testsrc2=size=100x60", "-frames:v", "1"]);
    const upload = await uploadProcessed(small);
    expect(size(await download(upload.thumb!, "thumb-small.webp"))).toEqual({ width: 100, height: 60 });
  });
});

describe("conversion to WebP", () => {
  it("turns a 1 MP screenshot over 1 MB into a WebP without metadata that shows the same picture", async () => {
    const original = make("screenshot.png", ["-f", "lavfi", "-i", "testsrc2=size=1280x800", "-frames:v", "1", "-vf", "noise=alls=20:allf=u", "-metadata", "comment=GPS 48.8584,2.2945"]);
    const bytes = (await readFile(original)).length;
    expect(bytes).toBeGreaterThan(1024 * 1024);
    const upload = await uploadProcessed(original);
    expect(upload.path).toMatch(/\.webp$/);
    expect(upload).toMatchObject({ width: 1280, height: 800 });
    const webp = await download(upload.src, "screenshot.webp");
    expect(upload.size).toBeLessThan(bytes * 0.9);
    expect(metadata(webp)).toEqual([]);
    expect(run("webpinfo", ["-quiet", webp])).not.toMatch(/error/i);
    expect(size(webp)).toEqual({ width: 1280, height: 800 });
    expect(difference(rgba(webp, 64, 40), rgba(original, 64, 40))).toBeLessThan(10);
  });

  it("handles an 8000x8000 photo (the media service: too large for the Worker's memory)", async () => {
    const original = make("huge.jpg", ["-f", "lavfi", "-i", "testsrc2=size=8000x8000", "-frames:v", "1", "-vf", "noise=alls=6:allf=u", "-q:v", "2"]);
    const upload = await uploadProcessed(original);
    expect(upload).toMatchObject({ width: 8000, height: 8000 });
    expect(upload.path).toMatch(/\.webp$/);
    expect(size(await download(upload.src, "huge.webp"))).toEqual({ width: 8000, height: 8000 });
    expect(size(await download(upload.thumb!, "huge-thumb.webp"))).toEqual({ width: 280, height: 280 });
  });
});

describe("animation", () => {
  it("keeps an animated GIF animated; its thumbnail is the first frame, still", async () => {
    const gif = make("anim.gif", ["-f", "lavfi", "-i", "testsrc=size=320x240:rate=5:duration=1", "-loop", "0"]);
    const upload = await uploadProcessed(gif);
    expect(upload.path).toMatch(/\.gif$/);
    const served = await download(upload.src, "served.gif");
    expect(Number(run("ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", served]))).toBe(5);
    const thumb = await download(upload.thumb!, "anim-gif-thumb.webp");
    expect(run("webpinfo", ["-summary", thumb])).not.toMatch(/Animation: 1/);
    expect(size(thumb)).toEqual({ width: 280, height: 210 });
    expect(difference(rgba(thumb, 56, 42), rgba(gif, 56, 42))).toBeLessThan(12);
  });

  it("keeps an animated WebP animated; its thumbnail is the first frame, still", async () => {
    const webp = make("anim.webp", ["-f", "lavfi", "-i", "testsrc=size=320x240:rate=5:duration=1", "-c:v", "libwebp_anim", "-loop", "0"]);
    const upload = await uploadProcessed(webp);
    expect(upload.path).toMatch(/\.webp$/);
    const served = await download(upload.src, "served.webp");
    expect(run("webpinfo", ["-summary", served])).toMatch(/Number of frames: 5/);
    const thumb = await download(upload.thumb!, "anim-webp-thumb.webp");
    expect(run("webpinfo", ["-summary", thumb])).not.toMatch(/Animation: 1/);
    expect(size(thumb)).toEqual({ width: 280, height: 210 });
  });
});
