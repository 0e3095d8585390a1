import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import ExifReader from "exifreader";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { VariantEncoding } from "../../container/src/contract";
import { mediaServiceForTests } from "../support/media-service";
import { ffmpeg } from "../support/tools";

/**
 * Image variants and video posters from the media service: each encoding at a width, upright,
 * never upscaled, without the camera's metadata. Outputs are checked with sharp and exifreader.
 */
const { job } = mediaServiceForTests("media-variants-test-secret-0123456789");
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "media-variants-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const fixture = (name: string) => readFile(path.join(import.meta.dirname, "../fixtures", name));

/** The encoding a file's first bytes say it is. */
function magic(bytes: Uint8Array): string {
  const text = Buffer.from(bytes.subarray(0, 12)).toString("latin1");
  if (text.slice(4, 12) === "ftypavif") return "avif";
  if (text.startsWith("RIFF") && text.slice(8, 12) === "WEBP") return "webp";
  if (text.startsWith("\xff\xd8\xff")) return "jpeg";
  if (text.startsWith("\x89PNG")) return "png";
  return "unknown";
}

/** What sharp reads each encoding as. */
const SHARP_READS: Record<VariantEncoding, { format: string; compression?: string }> = {
  avif: { format: "heif", compression: "av1" },
  webp: { format: "webp" },
  jpeg: { format: "jpeg" },
  png: { format: "png" },
};

/** Checks an answer is `to`, of `size`, with no camera metadata in it. */
async function expectVariant(
  result: Awaited<ReturnType<typeof job>>,
  to: VariantEncoding,
  size: { width: number; height: number },
) {
  expect(result.status, to).toBe(200);
  expect(result.type).toBe(`image/${to}`);
  expect(magic(result.bytes)).toBe(to);
  const meta = await sharp(result.bytes).metadata();
  expect({ format: meta.format, ...(to === "avif" ? { compression: meta.compression } : {}) }).toEqual(SHARP_READS[to]);
  expect({ width: meta.width, height: meta.height }, to).toEqual(size);
  expect(result.size, to).toEqual(size);
  expect([meta.exif, meta.xmp, meta.icc], to).toEqual([undefined, undefined, undefined]);
  const tags = ExifReader.load(Buffer.from(result.bytes), { expanded: true });
  expect([tags.exif, tags.gps, tags.xmp], to).toEqual([undefined, undefined, undefined]);
}

/** A small 320x240 H.264 MP4, with `tags` (such as a rotation) added by remuxing. */
async function mp4(tags: string[] = []): Promise<Uint8Array> {
  const plain = path.join(dir, "plain.mp4");
  const tagged = path.join(dir, "tagged.mp4");
  await ffmpeg([
    "-f",
    "lavfi",
    "-i",
    "testsrc=size=320x240:rate=5:duration=0.4",
    "-c:v",
    "libx264",
    "-pix_fmt",
    "yuv420p",
    plain,
  ]);
  await ffmpeg(["-i", plain, "-c", "copy", ...tags, tagged]);
  return new Uint8Array(await readFile(tagged));
}

describe("image variants", () => {
  it("encodes a camera JPEG as each encoding, 320 px wide, without its EXIF and GPS", async () => {
    const photo = await fixture("gps/DSCN0010.jpg");
    expect(ExifReader.load(photo, { expanded: true }).gps).toBeDefined();
    for (const to of ["avif", "webp", "jpeg", "png"] as const) {
      const result = await job(`/image/variant?format=jpeg&width=320&to=${to}`, photo);
      await expectVariant(result, to, { width: 320, height: 240 });
    }
  });

  it("never upscales", async () => {
    const result = await job("/image/variant?format=jpeg&width=1280&to=webp", await fixture("gps/DSCN0010.jpg"));
    await expectVariant(result, "webp", { width: 640, height: 480 });
  });

  it("turns an EXIF orientation upright", async () => {
    // landscape_6.jpg is stored 450x600 and displays as 600x450, as landscape_1.jpg is stored.
    const result = await job(
      "/image/variant?format=jpeg&width=300&to=avif",
      await fixture("orientation/landscape_6.jpg"),
    );
    await expectVariant(result, "avif", { width: 300, height: 225 });
  });

  it("decodes an iPhone HEIC", async () => {
    const result = await job("/image/variant?format=heic&width=640&to=avif", await fixture("heic/IMG_5195.HEIC"));
    await expectVariant(result, "avif", { width: 640, height: 826 });
  });

  it("keeps a PNG's alpha in PNG and AVIF", async () => {
    const png = await fixture("pngsuite/basn6a08.png");
    for (const to of ["png", "avif"] as const) {
      const result = await job(`/image/variant?format=png&width=320&to=${to}`, png);
      await expectVariant(result, to, { width: 32, height: 32 });
      expect((await sharp(result.bytes).metadata()).hasAlpha, to).toBe(true);
    }
  });

  it("flattens alpha on white for JPEG, which has none", async () => {
    const result = await job("/image/variant?format=png&width=32&to=jpeg", await fixture("pngsuite/basn6a08.png"));
    await expectVariant(result, "jpeg", { width: 32, height: 32 });
    // The top left pixel is fully transparent.
    const { data } = await sharp(result.bytes).raw().toBuffer({ resolveWithObject: true });
    expect([...data.subarray(0, 3)].every((channel) => channel > 240)).toBe(true);
  });

  it("answers 422 for bytes that are not the declared format", async () => {
    const result = await job("/image/variant?format=jpeg&width=320&to=avif", await fixture("pngsuite/basn6a08.png"));
    expect(result.status).toBe(422);
  });
});

describe("video posters", () => {
  it("encodes a video's first frame as AVIF and WebP, 160 px wide", async () => {
    const video = await mp4();
    for (const to of ["avif", "webp"] as const) {
      const result = await job(`/video/poster?format=mp4&width=160&to=${to}`, video);
      await expectVariant(result, to, { width: 160, height: 120 });
    }
  });

  it("turns a phone's rotated video upright, and never upscales", async () => {
    const video = await mp4(["-metadata:s:v:0", "rotate=90"]);
    const result = await job("/video/poster?format=mp4&width=640&to=jpeg", video);
    await expectVariant(result, "jpeg", { width: 240, height: 320 });
  });

  it("takes the frame at a second, and the last frame for a second past the end", async () => {
    const file = path.join(dir, "red-then-blue.mp4");
    const colour = (name: string) => ["-f", "lavfi", "-i", `color=${name}:size=320x240:rate=10:duration=1`];
    const concat = ["-filter_complex", "[0:v][1:v]concat=n=2:v=1[v]", "-map", "[v]"];
    await ffmpeg([...colour("red"), ...colour("blue"), ...concat, "-c:v", "libx264", "-pix_fmt", "yuv420p", file]);
    const video = new Uint8Array(await readFile(file));
    for (const [at, red] of [["0", true], ["0.5", true], ["1.5", false], ["3600", false]] as const) {
      const result = await job(`/video/poster?format=mp4&width=160&to=png&at=${at}`, video);
      expect(result.status, `at ${at}`).toBe(200);
      const { channels } = await sharp(result.bytes).stats();
      expect(channels[0]!.mean > channels[2]!.mean, `at ${at}`).toBe(red);
    }
  });

  it("answers 422 for a file that is no video", async () => {
    const result = await job("/video/poster?format=mp4&width=160&to=avif", await fixture("pngsuite/basn6a08.png"));
    expect(result.status).toBe(422);
  });
});
