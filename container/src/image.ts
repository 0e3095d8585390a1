import type { Config } from "./config";
import { JobError, run } from "./run";
import { stripWebpMetadata } from "./webp-metadata";

/**
 * Image work with libvips: it decodes every format the service takes (HEIC and AVIF through
 * libheif), applies EXIF orientation, and streams large images instead of holding them whole.
 * `[strip]` drops all metadata from the output. Sizes ending in ">" only ever shrink.
 */
const SAVE = (quality: number | "lossless") => (quality === "lossless" ? "[lossless,strip]" : `[Q=${quality},strip]`);

/** One vipsheader call (each costs tens of milliseconds): "file: 640x480 uchar, 3 bands, ..." */
export async function imageSize(config: Config, file: string): Promise<{ width: number; height: number }> {
  const out = await run(config.vipsheader, [file], config.jobTimeoutMs);
  const match = /: (\d+)x(\d+) /.exec(out);
  if (!match) throw new JobError(422, "output has no size");
  return { width: Number(match[1]), height: Number(match[2]) };
}

/** The whole image as WebP, upright (the first page or frame: animated formats are not sent here). */
export async function toWebp(config: Config, input: string, output: string, quality: number | "lossless"): Promise<void> {
  await run(config.vipsthumbnail, [input, "--size", "30000x30000>", "-o", `${output}${SAVE(quality)}`], config.jobTimeoutMs);
  await stripWebpMetadata(output);
}

/** The first frame, upright, `width` pixels wide at most, as WebP. */
export async function imageThumbnail(config: Config, input: string, output: string, width: number): Promise<void> {
  await run(config.vipsthumbnail, [input, "--size", `${width}x>`, "-o", `${output}${SAVE(80)}`], config.jobTimeoutMs);
  await stripWebpMetadata(output);
}
