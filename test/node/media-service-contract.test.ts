import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  BadCall,
  callPath,
  MEDIA_PORT,
  operationAt,
  parseCall,
  readSize,
  readThumbnailLength,
  sizeHeaders,
  thumbnailLengthHeader,
  type ImageFormat,
  type MediaCall,
  type VideoFormat,
} from "../../container/src/contract";
import { loadConfig } from "../../container/src/config";
import { MEDIA_CONCURRENT_JOBS } from "../../src/media/container-size";
import type { Format } from "../../src/media/sniff";
import { MEDIA_JOB_TIMEOUT_MS } from "../../src/media/timeouts";
import { MAX_FILE_BYTES } from "../../src/model/spec-limits";

/**
 * The contract the Worker and the media service share (container/src/contract.ts): a call the
 * Worker builds is the call the service reads, and the numbers each side keeps apart agree.
 */
const ROOT = path.resolve(import.meta.dirname, "../..");

const parsed = (address: string) => {
  const url = new URL(address, "http://media");
  return parseCall(operationAt(url.pathname)!, url.searchParams);
};

describe("the media service's contract", () => {
  it.each<MediaCall>([
    { operation: "probeVideo", format: "mpeg" },
    { operation: "videoToMp4", format: "avi" },
    { operation: "videoToMp4", format: "3gp", thumbnailWidth: 280 },
    { operation: "stripVideo", format: "webm", thumbnailWidth: 280 },
    { operation: "videoThumbnail", format: "mkv", width: 280 },
    { operation: "imageToWebp", format: "heic", quality: 82 },
    { operation: "imageToWebp", format: "bmp", quality: "lossless" },
    { operation: "imageThumbnail", format: "png", width: 120 },
    { operation: "imageVariant", format: "heic", width: 640, to: "avif" },
    { operation: "imageVariant", format: "png", width: 4096, to: "png" },
    { operation: "videoPoster", format: "mov", width: 160, to: "webp" },
    { operation: "videoPoster", format: "webm", width: 1, to: "jpeg" },
  ])("reads back the call the Worker builds: %o", (call) => {
    expect(parsed(callPath(call))).toEqual(call);
  });

  it("keeps the paths the service has always answered at", () => {
    const pathOf = (call: MediaCall) => new URL(callPath(call), "http://media").pathname;
    expect(pathOf({ operation: "videoThumbnail", format: "mp4", width: 280 })).toBe("/thumbnail");
    expect(pathOf({ operation: "imageThumbnail", format: "png", width: 280 })).toBe("/image/thumbnail");
    expect(pathOf({ operation: "stripVideo", format: "mp4" })).toBe("/video/strip");
    expect(pathOf({ operation: "imageVariant", format: "png", width: 640, to: "avif" })).toBe("/image/variant");
    expect(pathOf({ operation: "videoPoster", format: "mp4", width: 640, to: "avif" })).toBe("/video/poster");
    expect(operationAt("/video")).toBeUndefined();
  });

  it("refuses a query it cannot take, saying why", () => {
    const refusal = (address: string) => {
      try {
        parsed(address);
      } catch (error) {
        expect(error).toBeInstanceOf(BadCall);
        return (error as Error).message;
      }
      throw new Error(`${address} was taken`);
    };
    expect(refusal("/video/mp4")).toBe("format must be one of mp4, mov, m4v, 3gp, webm, mkv, avi, mpeg, wmv, flv");
    expect(refusal("/video/strip?format=avi")).toBe("format must be one of mp4, webm");
    const images = "jpeg, png, gif, webp, avif, bmp, tiff, heic, heif";
    expect(refusal("/image/thumbnail?format=svg")).toBe(`format must be one of ${images}`);
    expect(refusal("/thumbnail?format=mp4&width=0")).toBe("width must be 1 to 4096");
    expect(refusal("/video/mp4?format=mp4&thumbnail=x")).toBe("thumbnail must be 1 to 4096");
    expect(refusal("/image/webp?format=png&quality=101")).toBe("quality must be 1 to 100, or lossless");
    const encodings = "to must be one of avif, webp, jpeg, png";
    expect(refusal("/image/variant?format=png&width=640&to=gif")).toBe(encodings);
    expect(refusal("/image/variant?format=png&width=640")).toBe(encodings);
    expect(refusal("/video/poster?format=mp4&width=160&to=heic")).toBe(encodings);
    expect(refusal("/image/variant?format=png&width=4097&to=avif")).toBe("width must be 1 to 4096");
    expect(refusal("/image/variant?format=png&width=64.5&to=avif")).toBe("width must be 1 to 4096");
    // No default width: the Worker stores the answer as the variant it named.
    expect(refusal("/video/poster?format=mp4&to=avif")).toBe("width must be 1 to 4096");
    expect(refusal("/video/poster?format=png&width=160&to=avif")).toMatch(/^format must be one of mp4,/);
  });

  it("takes the defaults of a call that leaves them out", () => {
    expect(parsed("/image/webp?format=png")).toEqual({ operation: "imageToWebp", format: "png", quality: 82 });
    expect(parsed("/image/thumbnail?format=png")).toEqual({ operation: "imageThumbnail", format: "png", width: 280 });
  });

  it("reads back the answer headers the service writes", () => {
    const video = { width: 640, height: 360, duration: 2.5 };
    const headers = new Headers({ ...sizeHeaders(video), ...thumbnailLengthHeader(300) });
    expect(readSize(headers)).toEqual(video);
    expect(readThumbnailLength(headers)).toBe(300);
    // What the output does not say goes empty, and reads as unknown.
    const unknown = { width: null, height: 10, duration: null };
    expect(readSize(new Headers(sizeHeaders(unknown)))).toEqual(unknown);
    const image = { width: 5, height: 6 };
    expect(readSize(new Headers(sizeHeaders(image)))).toEqual({ ...image, duration: null });
    expect(readThumbnailLength(new Headers())).toBeNull();
    expect(readThumbnailLength(new Headers(thumbnailLengthHeader(-1)))).toBeNaN();
  });

  it("names every format the Worker sniffs, and no other", () => {
    expectTypeOf<VideoFormat | ImageFormat>().toEqualTypeOf<Format>();
  });

  it("exposes the port the service listens on in its image", () => {
    const dockerfile = readFileSync(path.join(ROOT, "container/Dockerfile"), "utf8");
    expect([...dockerfile.matchAll(/^EXPOSE (\d+)$/gm)].map((m) => Number(m[1]))).toEqual([MEDIA_PORT]);
    // The port comes from the service's own default, or the Worker's PORT: the image sets none.
    expect(dockerfile).not.toMatch(/^ENV .*\bPORT=/m);
  });

  it("runs a process started without the Worker's settings (npm run dev's) as the Worker starts its containers", () => {
    const tools = { FFMPEG_PATH: "ffmpeg", FFPROBE_PATH: "ffprobe" };
    const config = loadConfig({ MEDIA_SECRET: "a secret of 16+ characters", ...tools });
    expect(config.port).toBe(MEDIA_PORT);
    expect(config.jobTimeoutMs).toBe(MEDIA_JOB_TIMEOUT_MS);
    expect(config.maxConcurrentJobs).toBe(MEDIA_CONCURRENT_JOBS);
    // Room for the largest file the Worker stores.
    expect(config.maxInputBytes).toBeGreaterThanOrEqual(MAX_FILE_BYTES);
  });
});
