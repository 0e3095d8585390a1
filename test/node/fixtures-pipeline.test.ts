import { readdirSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import { FIXTURES_DIR, GENERATED_DIR, generateTestMedia } from "../support/media";
import { processedUpload, uploadFile, useMediaTestBed } from "./server";

/**
 * What `npm run dev` gives on a machine with only Node and npm: the dev server and the media
 * service with npm's ffmpeg, sharp and libheif. Every image fixture gets a thumbnail (HEIC, HEIF,
 * TIFF, AVIF and BMP become WebP) and every video fixture an MP4 (or stays a WebM).
 */
const IMAGES = [
  ...["gps", "orientation", "heic"].flatMap((folder) =>
    readdirSync(path.join(FIXTURES_DIR, folder)).map((name) => `${folder}/${name}`),
  ),
  // The tiny files that hold pixels (gif.gif, tiff.tif and webp.webp are headers without an image).
  ...["tiny/heif.heif", "tiny/bmp.bmp", "tiny/jpeg.jpg", "tiny/png-transparent.png", "tiny/gif-transparent.gif"],
  ...["pngsuite/basn6a16.png", "pngsuite/basi3p08.png", "pngsuite/tbrn2c08.png"],
].map((name) => `fixtures/${name}`);
const GENERATED_IMAGES = [
  "photo.tif",
  "photo.bmp",
  "gps.avif",
  "photo-5mp.jpg",
  "screenshot-1mp.png",
  "photo-2mp.webp",
  "deep-16bit.png",
].map((name) => `generated/${name}`);
const VIDEOS = [
  "clip.mp4",
  "clip.webm",
  "clip.avi",
  "clip.mov",
  "clip.m4v",
  "clip.mkv",
  "clip.mpg",
  "clip.wmv",
  "clip.flv",
  "clip.3gp",
  "odd.avi",
  "rotated.mov",
];

/** `fixtures/...` (test/fixtures) or `generated/...` (made by generateTestMedia). */
const fileOf = (name: string) =>
  name.startsWith("fixtures/") ? path.join(FIXTURES_DIR, name.slice(9)) : path.join(GENERATED_DIR, name.slice(10));

const WEBP_AFTER = /\.(heic|heif|tif|avif|bmp)$/i;

const bed = useMediaTestBed("fixtures-pipeline");

beforeAll(async () => {
  await generateTestMedia();
});

interface Upload {
  id: string;
  path: string;
  thumb: string | null;
  width: number | null;
  height: number | null;
}

async function uploadAndProcess(file: string): Promise<Upload> {
  const res = await uploadFile(bed.server, bed.account.full, new Uint8Array(await readFile(file)), path.basename(file));
  const body = (await res.json()) as { data: Upload; errors?: string };
  expect(res.status, `${file}: ${body.errors}`).toBe(200);
  return processedUpload<Upload>(bed.server, bed.account.full, body.data.id);
}

async function fetchThumb(upload: Upload) {
  const res = await fetch(upload.thumb!);
  expect(res.headers.get("content-type")).toBe("image/webp");
  return sharp(new Uint8Array(await res.arrayBuffer())).metadata();
}

describe("the whole pipeline from npm alone", () => {
  it.each([...IMAGES, ...GENERATED_IMAGES])("gives %s a thumbnail", async (file) => {
    const upload = await uploadAndProcess(fileOf(file));
    const thumb = await fetchThumb(upload);
    expect(thumb.format).toBe("webp");
    expect(thumb.width).toBe(Math.min(280, upload.width!));
    if (WEBP_AFTER.test(file)) {
      expect(upload.path).toMatch(/\.webp$/);
      const served = await fetch(upload.path);
      expect(served.status).toBe(200);
      expect(served.headers.get("content-type")).toBe("image/webp");
    }
  });

  it("keeps a JPEG or PNG wider than WebP holds rather than optimise it at a lower resolution", async () => {
    const noise = { type: "gaussian", mean: 128, sigma: 40 } as const;
    const wide = await sharp({ create: { width: 20000, height: 40, channels: 3, background: "#000", noise } })
      .png()
      .toBuffer();
    expect(wide.length).toBeGreaterThan(1024 * 1024);
    const file = path.join(bed.dir, "wide.png");
    await writeFile(file, wide);
    const upload = await uploadAndProcess(file);
    expect(upload.path).toMatch(/\.png$/);
    expect([upload.width, upload.height]).toEqual([20000, 40]);
    expect((await fetchThumb(upload)).width).toBe(280);
  });

  it.each(VIDEOS)("converts %s and gives it a thumbnail", async (name) => {
    const upload = await uploadAndProcess(fileOf(`generated/${name}`));
    expect(upload.path).toMatch(name.endsWith(".webm") ? /\.webm$/ : /\.mp4$/);
    expect(upload.width).toBeGreaterThan(0);
    expect((await fetchThumb(upload)).format).toBe("webp");
  });
});
