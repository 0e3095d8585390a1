import type { Sharp } from "sharp";
import smartcrop from "smartcrop";
import { asJobError, type ImageSize } from "./image";
import { type Job, timeLeft } from "./run";
import type { GravityPoint } from "./transform-contract";

/**
 * Where a cut keeps what matters (`gravity=attention`): smartcrop (npm) over a small upright
 * prescale that sharp makes, chosen over libvips' attention strategy because it keeps a photo's
 * salient object far more often (docs/behaviour.md, "gravity=auto: where and why"). Its answer is
 * a point, the centre of the crop it prefers, so the full image is then cut as for a point
 * gravity and the output's size stays exact.
 */

/**
 * The prescale's shorter side, as smartcrop's own prescale makes it (its weights are tuned for
 * it); its longer side at most 4 times that, so an extreme aspect cannot ask for a large copy.
 */
const PRESCALE_SIDE = 256;
const PRESCALE_LONGEST = 4 * PRESCALE_SIDE;

interface Pixels {
  width: number;
  height: number;
  data: Uint8ClampedArray;
}
interface Crop {
  x: number;
  y: number;
  width: number;
  height: number;
}
/** The part of smartcrop 2.0.5 used here: its index.d.ts types only the browser's canvas path. */
interface RawPixelsSmartcrop {
  crop(
    image: Pixels,
    options: { width: number; height: number; prescale: false; imageOperations: typeof RAW_PIXELS },
  ): Promise<{ topCrop: Crop | null }>;
  ImgData: new (width: number, height: number, data: Uint8ClampedArray) => Pixels;
}
const engine = smartcrop as unknown as RawPixelsSmartcrop;

/** smartcrop's image operations over pixels already decoded as RGBA: no canvas, and no resampling (prescale off). */
const RAW_PIXELS = {
  open: async (image: Pixels) => image,
  resample: async (image: Pixels) => image,
  getData: async (image: Pixels) => new engine.ImgData(image.width, image.height, image.data),
};

/**
 * The point (fractions of the upright image) a cover cut to `box` should centre on, or null when
 * smartcrop failed (logged; the caller falls back to libvips' attention). A failure of sharp
 * making the prescale is the job's (the image is bad, or its time is up).
 */
export async function salientPoint(
  job: Job,
  image: Sharp,
  upright: ImageSize,
  box: ImageSize,
): Promise<GravityPoint | null> {
  const pixels = await prescale(job, image, upright);
  try {
    if (pixels.data.length !== pixels.width * pixels.height * 4) throw new Error("the prescale is not RGBA");
    const { topCrop } = await engine.crop(pixels, { ...box, prescale: false, imageOperations: RAW_PIXELS });
    if (!topCrop || !(topCrop.width > 0 && topCrop.height > 0)) throw new Error("no crop found");
    const fraction = (start: number, span: number, side: number) => Math.min(1, Math.max(0, (start + span / 2) / side));
    return {
      x: fraction(topCrop.x, topCrop.width, pixels.width),
      y: fraction(topCrop.y, topCrop.height, pixels.height),
    };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    console.warn(`smartcrop failed on ${upright.width}x${upright.height} for ${box.width}x${box.height}: ${message}`);
    return null;
  }
}

/** The upright image as RGBA, its shorter side PRESCALE_SIDE (never enlarged). */
async function prescale(job: Job, image: Sharp, upright: ImageSize): Promise<Pixels> {
  const longer = Math.max(upright.width, upright.height);
  const scale = Math.min(1, PRESCALE_SIDE / Math.min(upright.width, upright.height), PRESCALE_LONGEST / longer);
  const size = {
    width: Math.max(1, Math.round(upright.width * scale)),
    height: Math.max(1, Math.round(upright.height * scale)),
  };
  try {
    const { data, info } = await image
      .clone()
      .resize({ ...size, fit: "fill" })
      .toColourspace("srgb")
      .ensureAlpha()
      .raw({ depth: "uchar" })
      .timeout({ seconds: Math.max(1, Math.ceil(timeLeft(job) / 1000)) })
      .toBuffer({ resolveWithObject: true });
    return {
      width: info.width,
      height: info.height,
      data: new Uint8ClampedArray(data.buffer, data.byteOffset, data.length),
    };
  } catch (error) {
    throw asJobError(job, error);
  }
}
