import { open as openFile, readFile } from "node:fs/promises";
import path from "node:path";
import sharp from "sharp";
import type { Config } from "./config";
import { decodeHeic } from "./heic";
import { JobError, run } from "./run";

/**
 * Image work in-process with sharp (libvips): it decodes JPEG, PNG, WebP, GIF, TIFF and AVIF,
 * applies EXIF orientation, and writes WebP without any metadata (sharp keeps none unless asked).
 * Two formats need help first: HEIC/HEIF (HEVC) through the WebAssembly libheif, and BMP, which
 * libvips does not read, through ffmpeg.
 */

/** The spec's 30000 x 30000 px, enforced by the decoders too, not only by the Worker's header check. */
export const MAX_PIXELS = 30000 * 30000;
/** WebP cannot hold a larger side: bigger images are scaled down to fit when converted. */
export const WEBP_MAX_SIDE = 16383;
const THUMBNAIL_QUALITY = 80;

// Every job reads a new file once: libvips' operation cache would only hold memory.
sharp.cache(false);

export interface ImageSize {
  width: number;
  height: number;
}

/** The whole image as WebP, upright (the first frame: animated formats are not sent here). */
export async function toWebp(config: Config, input: string, output: string, quality: number | "lossless"): Promise<ImageSize> {
  const image = await decode(config, input, path.dirname(output));
  return write(
    image
      .resize({ width: WEBP_MAX_SIDE, height: WEBP_MAX_SIDE, fit: "inside", withoutEnlargement: true })
      .webp(quality === "lossless" ? { lossless: true } : { quality }),
    output,
  );
}

/** The first frame, upright, `width` pixels wide at most, as WebP. */
export async function imageThumbnail(config: Config, input: string, output: string, width: number): Promise<ImageSize> {
  const image = await decode(config, input, path.dirname(output));
  return write(image.resize({ width, withoutEnlargement: true }).webp({ quality: THUMBNAIL_QUALITY }), output);
}

async function write(image: sharp.Sharp, output: string): Promise<ImageSize> {
  try {
    const info = await image.toFile(output);
    return { width: info.width, height: info.height };
  } catch (error) {
    throw asJobError(error);
  }
}

/** A sharp pipeline over the input's first frame, turned upright; `dir` is the job's own folder. */
async function decode(config: Config, input: string, dir: string): Promise<sharp.Sharp> {
  const options: sharp.SharpOptions = {
    limitInputPixels: MAX_PIXELS,
    // Like the Worker: a damaged file is refused there already; minor warnings are not fatal.
    failOn: "error",
  };
  const timeout = { seconds: Math.max(1, Math.ceil(config.jobTimeoutMs / 1000)) };
  const head = await readHead(input);
  if (head.toString("latin1", 0, 2) === "BM") {
    return sharp(await bmpToPng(config, input, head, dir), options).timeout(timeout);
  }
  let metadata: sharp.Metadata;
  try {
    metadata = await sharp(input, options).metadata();
  } catch (error) {
    throw asJobError(error);
  }
  if (metadata.format === "heif" && metadata.compression === "hevc") {
    const raw = await decodeHeic(await readFile(input), MAX_PIXELS);
    return sharp(raw.data, { ...options, raw: { width: raw.width, height: raw.height, channels: raw.channels } }).timeout(timeout);
  }
  return sharp(input, options).rotate().timeout(timeout);
}

async function readHead(file: string): Promise<Buffer> {
  const handle = await openFile(file, "r");
  try {
    const head = Buffer.alloc(32);
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    return head.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** BMP decoded by ffmpeg, told the format so that nothing else is guessed, after a size check. */
async function bmpToPng(config: Config, input: string, head: Buffer, dir: string): Promise<string> {
  if (head.length < 26) throw new JobError(422, "truncated BMP header");
  // BITMAPINFOHEADER and later: signed 32-bit sizes (negative height means top-down rows).
  const core = head.readUInt32LE(14) === 12;
  const width = core ? head.readUInt16LE(18) : Math.abs(head.readInt32LE(18));
  const height = core ? head.readUInt16LE(20) : Math.abs(head.readInt32LE(22));
  if (width * height > MAX_PIXELS) throw new JobError(422, `image of ${width}x${height} px is over the pixel limit`);
  const png = path.join(dir, "decoded.png");
  await run(config.ffmpeg, ["-nostdin", "-v", "error", "-f", "bmp_pipe", "-i", input, "-frames:v", "1", "-c:v", "png", "-f", "image2", png], config.jobTimeoutMs);
  return png;
}

/** sharp's failures on a file it was given are about the file: bad or unsupported media. */
function asJobError(error: unknown): JobError {
  if (error instanceof JobError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (/timeout/i.test(message)) return new JobError(504, message);
  return new JobError(422, message);
}
