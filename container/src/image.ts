import { readFile } from "node:fs/promises";
import path from "node:path";
import sharp, { type Metadata, type Sharp, type SharpOptions } from "sharp";
import type { ImageFormat, VariantEncoding, WebpQuality } from "./contract";
import { BMP_DEMUXER, head, inputArgs } from "./formats";
import { decodeHeic } from "./heic";
import { JobError, run, timedOut, timeLeft, type Job } from "./run";

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

// Only the loaders of the formats above may run, whatever a file's bytes say: libvips would also
// read SVG, PDF, CSV, matrix and its own format, some of which follow references to other files.
sharp.block({ operation: ["VipsForeignLoad"] });
sharp.unblock({
  operation: [
    "VipsForeignLoadJpeg",
    "VipsForeignLoadPng",
    "VipsForeignLoadNsgif",
    "VipsForeignLoadWebp",
    "VipsForeignLoadHeif",
    "VipsForeignLoadTiffFile",
    "VipsForeignLoadTiffBuffer",
    "VipsForeignLoadTiffSource",
  ],
});

/** What sharp's metadata says of each declared format (AVIF and HEIC are both HEIF, told apart by codec). */
const SHARP_FORMATS: Record<Exclude<ImageFormat, "bmp">, { format: string; compression?: string }> = {
  jpeg: { format: "jpeg" },
  png: { format: "png" },
  gif: { format: "gif" },
  webp: { format: "webp" },
  tiff: { format: "tiff" },
  avif: { format: "heif", compression: "av1" },
  heic: { format: "heif", compression: "hevc" },
  heif: { format: "heif" },
};

export interface ImageSize {
  width: number;
  height: number;
}

/** The whole image as WebP, upright (the first frame: animated formats are not sent here). */
export async function toWebp(
  job: Job,
  input: string,
  format: ImageFormat,
  output: string,
  quality: WebpQuality,
): Promise<ImageSize> {
  const image = await decode(job, input, format, path.dirname(output));
  return write(
    job,
    image
      .resize({ width: WEBP_MAX_SIDE, height: WEBP_MAX_SIDE, fit: "inside", withoutEnlargement: true })
      .webp(quality === "lossless" ? { lossless: true } : { quality }),
    output,
  );
}

/** The first frame, upright, `width` pixels wide at most, as WebP. */
export async function imageThumbnail(
  job: Job,
  input: string,
  format: ImageFormat,
  output: string,
  width: number,
): Promise<ImageSize> {
  const image = await decode(job, input, format, path.dirname(output));
  return write(job, image.resize({ width, withoutEnlargement: true }).webp({ quality: THUMBNAIL_QUALITY }), output);
}

/**
 * How each variant encoding is written. AVIF: quality 59 with 4:2:0 chroma (as JPEG's), the
 * lowest that keeps SSIM (luma) at 0.95 or more against the resized original on the repository's
 * camera photos while staying 40% or more under a quality-85 JPEG of the same size: 640 px
 * photos re-encoded at their own size are the hard case (quality 50 at 4:4:4 gave SSIM 0.89 to
 * 0.93; 59 at 4:2:0 gives 0.951 to 0.964 for 41 to 48% fewer bytes; npm run bench -- variants).
 * AVIF is also the slow one, and the first request for a variant waits for its encode: on a
 * 12 MP photo (sharp 0.35, two cores) at 640 px, effort 4 took 1.5 s and effort 2 0.35 s for 19%
 * more bytes; at 2560 px, 16 s against 3 s. So effort 4 only up to 640 px wide. PNG keeps
 * sharp's default compression (level 6): level 9 took 1.5 to 5 times as long for 0 to 2% fewer
 * bytes. JPEG has no alpha: transparent pixels would show whatever colour they hide, so it is
 * flattened on white. A transform may ask for another quality and another colour to flatten on
 * (`EncodeChoices`); PNG is lossless and has no quality to ask for.
 */
export const VARIANT_ENCODERS: Record<
  VariantEncoding,
  (image: Sharp, outputWidth: number, choices?: EncodeChoices) => Sharp
> = {
  avif: (image, width, { quality = 59 } = {}) =>
    image.avif({ quality, chromaSubsampling: "4:2:0", effort: width <= 640 ? 4 : 2 }),
  webp: (image, _width, { quality = THUMBNAIL_QUALITY } = {}) => image.webp({ quality }),
  jpeg: (image, _width, { quality = 82, background = "#ffffff" } = {}) =>
    image.flatten({ background }).jpeg({ quality, mozjpeg: true }),
  png: (image) => image.png(),
};

/** What a transform may change of an encoding's defaults: its quality, and the colour JPEG flattens on. */
export interface EncodeChoices {
  quality?: number;
  /** `#rrggbb`. */
  background?: string;
}

/**
 * The first frame, upright, `width` pixels wide at most (never upscaled), as `to`, with no
 * metadata. Its height stays within WebP's limit whatever the encoding, so that every encoding
 * of one variant has the same size.
 */
export async function imageVariant(
  job: Job,
  input: string,
  format: ImageFormat,
  output: string,
  width: number,
  to: VariantEncoding,
): Promise<ImageSize> {
  const image = await decode(job, input, format, path.dirname(output));
  const upright = await uprightSize(job, image);
  const box = { width, height: WEBP_MAX_SIDE, fit: "inside", withoutEnlargement: true } as const;
  return write(job, VARIANT_ENCODERS[to](image.resize(box), Math.min(width, upright.width)), output);
}

/** The size of a decoded image as it displays (EXIF orientation applied). */
export async function uprightSize(job: Job, image: Sharp): Promise<ImageSize> {
  try {
    return (await image.metadata()).autoOrient;
  } catch (error) {
    throw asJobError(job, error);
  }
}

export async function write(job: Job, image: Sharp, output: string): Promise<ImageSize> {
  try {
    const info = await image.timeout({ seconds: Math.max(1, Math.ceil(timeLeft(job) / 1000)) }).toFile(output);
    return { width: info.width, height: info.height };
  } catch (error) {
    throw asJobError(job, error);
  }
}

/**
 * A sharp pipeline over the input's first frame, turned upright, if the input is the declared
 * `format` (else 422); `dir` is the job's own folder.
 */
export async function decode(job: Job, input: string, format: ImageFormat, dir: string): Promise<Sharp> {
  const options: SharpOptions = {
    limitInputPixels: MAX_PIXELS,
    // Like the Worker: a damaged file is refused there already; minor warnings are not fatal.
    failOn: "error",
  };
  if (format === "bmp") return sharp(await bmpToPng(job, input, dir), options);
  let metadata: Metadata;
  try {
    metadata = await sharp(input, options).metadata();
  } catch (error) {
    throw asJobError(job, error);
  }
  const expected = SHARP_FORMATS[format];
  if (metadata.format !== expected.format || (expected.compression && metadata.compression !== expected.compression)) {
    const found = [metadata.format, metadata.compression].filter(Boolean).join("/");
    throw new JobError(422, `the file is ${found}, not ${format}`);
  }
  if (metadata.format === "heif" && metadata.compression === "hevc") {
    const raw = await decodeHeic(await readFile(input), MAX_PIXELS);
    return sharp(raw.data, { ...options, raw: { width: raw.width, height: raw.height, channels: raw.channels } });
  }
  return sharp(input, options).rotate();
}

/** BMP decoded by ffmpeg, told the format so that nothing else is guessed, after a size check. */
async function bmpToPng(job: Job, input: string, dir: string): Promise<string> {
  const bytes = await head(input, 32);
  if (bytes.toString("latin1", 0, 2) !== "BM") throw new JobError(422, "the file is not a BMP");
  if (bytes.length < 26) throw new JobError(422, "truncated BMP header");
  // BITMAPINFOHEADER and later: signed 32-bit sizes (negative height means top-down rows).
  const core = bytes.readUInt32LE(14) === 12;
  const width = core ? bytes.readUInt16LE(18) : Math.abs(bytes.readInt32LE(18));
  const height = core ? bytes.readUInt16LE(20) : Math.abs(bytes.readInt32LE(22));
  if (width * height > MAX_PIXELS) throw new JobError(422, `image of ${width}x${height} px is over the pixel limit`);
  const png = path.join(dir, "decoded.png");
  await run(job, "ffmpeg", [
    "-nostdin",
    "-v",
    "error",
    ...inputArgs(BMP_DEMUXER, input),
    "-frames:v",
    "1",
    "-c:v",
    "png",
    "-f",
    "image2",
    png,
  ]);
  return png;
}

/** sharp's failures on a file it was given are about the file: bad or unsupported media. */
export function asJobError(job: Job, error: unknown): JobError {
  if (error instanceof JobError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (/timeout/i.test(message)) return timedOut(job);
  return new JobError(422, message);
}
