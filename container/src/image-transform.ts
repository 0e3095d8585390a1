import path from "node:path";
import sharp, { type OutputInfo, type Sharp } from "sharp";
import type { ImageFormat } from "./contract";
import { asJobError, decode, type ImageSize, uprightSize, VARIANT_ENCODERS, write } from "./image";
import { type Job, timeLeft } from "./run";
import { salientPoint } from "./salience";
import {
  type Gravity,
  type GravityPoint,
  type ImageTransform,
  MAX_TRANSFORM_PIXELS,
  MAX_TRANSFORM_SIDE,
} from "./transform-contract";

/**
 * A transform (transform-contract.ts) as one sharp pipeline over the upright first frame: the fit
 * shapes it, then the blur, then the encoding, with the variants' encoders and defaults. sharp
 * writes no metadata unless asked.
 */
export async function imageTransform(
  job: Job,
  input: string,
  format: ImageFormat,
  output: string,
  transform: ImageTransform,
): Promise<ImageSize> {
  const image = await decode(job, input, format, path.dirname(output));
  const shaped = await shape(job, image, await uprightSize(job, image), transform);
  const blurred = transform.blur === undefined ? shaped.image : shaped.image.blur(transform.blur / 2);
  const choices = { quality: transform.quality, background: `#${transform.background.slice(0, 6)}` };
  return write(job, VARIANT_ENCODERS[transform.to](blurred, shaped.width, choices), output);
}

/** sharp's names of the named gravities (`attention` is found by salience.ts). */
const POSITIONS = { center: "centre", top: "north", bottom: "south", left: "west", right: "east" } as const;

/** The pipeline resized, cut or padded as the transform's fit says, and the output's width. */
async function shape(
  job: Job,
  image: Sharp,
  upright: ImageSize,
  transform: ImageTransform,
): Promise<{ image: Sharp; width: number }> {
  const { width, height, fit } = transform;
  if (width === undefined || height === undefined || fit === "scale-down" || fit === "contain") {
    // One side only: every fit scales to it. The other side stays within the largest a transform
    // may have (and so within WebP's 16383 px), whatever the image's aspect.
    const box = {
      width: width ?? Math.min(MAX_TRANSFORM_SIDE, Math.floor(MAX_TRANSFORM_PIXELS / (height ?? 1))),
      height: height ?? Math.min(MAX_TRANSFORM_SIDE, Math.floor(MAX_TRANSFORM_PIXELS / (width ?? 1))),
    };
    const scale = Math.min(box.width / upright.width, box.height / upright.height);
    const enlarge = fit === "contain" || fit === "cover" || fit === "pad";
    const factor = enlarge ? scale : Math.min(1, scale);
    const resized = image.resize({ ...box, fit: "inside", withoutEnlargement: !enlarge });
    return { image: resized, width: Math.max(1, Math.round(upright.width * factor)) };
  }
  if (fit === "pad") return { image: await pad(job, image, { width, height }, transform), width };
  const box = fit === "crop" ? cropBox(upright, { width, height }) : { width, height };
  return { image: await cut(job, image, upright, box, transform.gravity), width: box.width };
}

/** crop's box: cover's, but a side of the image smaller than the box's stays as it is (never enlarged). */
function cropBox(upright: ImageSize, box: ImageSize): ImageSize {
  if (box.width <= upright.width && box.height <= upright.height) return box;
  return { width: Math.min(box.width, upright.width), height: Math.min(box.height, upright.height) };
}

/** Scaled to cover `box` exactly, the overflow cut at the gravity. */
async function cut(job: Job, image: Sharp, upright: ImageSize, box: ImageSize, gravity: Gravity): Promise<Sharp> {
  if (gravity !== "attention") {
    return typeof gravity === "string"
      ? image.resize({ ...box, fit: "cover", position: POSITIONS[gravity] })
      : cutAt(image, upright, box, gravity);
  }
  const scaled = coverSize(upright, box);
  // The box has the image's aspect: nothing is cut, nothing to look for.
  if (scaled.width === box.width && scaled.height === box.height) return image.resize({ ...box, fit: "fill" });
  const point = await salientPoint(job, image, upright, box);
  // smartcrop failed (salience.ts logged why): libvips' own attention strategy still finds something.
  if (point === null) return image.resize({ ...box, fit: "cover", position: sharp.strategy.attention });
  return cutAt(image, upright, box, point);
}

/** Scaled to cover `box` exactly, the overflow cut around a point. */
function cutAt(image: Sharp, upright: ImageSize, box: ImageSize, point: GravityPoint): Sharp {
  // sharp has no point gravity: scale to cover, then take the box centred on the point, moved
  // back inside the image where the point is nearer an edge than half the box.
  const scaled = coverSize(upright, box);
  const start = (point: number, side: number, span: number) =>
    Math.min(side - span, Math.max(0, Math.round(point * side - span / 2)));
  return image.resize({ ...scaled, fit: "fill" }).extract({
    left: start(point.x, scaled.width, box.width),
    top: start(point.y, scaled.height, box.height),
    width: box.width,
    height: box.height,
  });
}

/** The image's size scaled to cover `box`: one side the box's, the other at least the box's. */
function coverSize(upright: ImageSize, box: ImageSize): ImageSize {
  const scale = Math.max(box.width / upright.width, box.height / upright.height);
  return {
    width: Math.max(box.width, Math.round(upright.width * scale)),
    height: Math.max(box.height, Math.round(upright.height * scale)),
  };
}

/** Contained in `box`, the rest filled with the background, the image placed at the gravity. */
async function pad(job: Job, image: Sharp, box: ImageSize, transform: ImageTransform): Promise<Sharp> {
  const { gravity } = transform;
  const background = backgroundOf(transform);
  if (typeof gravity === "string") {
    // Nothing is cut: attention has nothing to choose, and centres.
    const position = POSITIONS[gravity === "attention" ? "center" : gravity];
    return image.resize({ ...box, fit: "contain", position, background });
  }
  // A point: the contained size first, to put the spare room on each side as the point divides it.
  let contained: { data: Buffer; info: OutputInfo };
  try {
    contained = await image
      .resize({ ...box, fit: "inside" })
      .raw()
      .timeout({ seconds: Math.max(1, Math.ceil(timeLeft(job) / 1000)) })
      .toBuffer({ resolveWithObject: true });
  } catch (error) {
    throw asJobError(job, error);
  }
  const { data, info } = contained;
  const spareX = box.width - info.width;
  const spareY = box.height - info.height;
  const left = Math.floor(spareX * gravity.x);
  const top = Math.floor(spareY * gravity.y);
  return sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } }).extend({
    left,
    right: spareX - left,
    top,
    bottom: spareY - top,
    background,
  });
}

/** The fill as sharp takes it; opaque for JPEG, which has no alpha to keep it in. */
function backgroundOf(transform: ImageTransform) {
  const hex = transform.background;
  const channel = (at: number) => Number.parseInt(hex.slice(at, at + 2), 16);
  const alpha = transform.to === "jpeg" ? 1 : channel(6) / 255;
  return { r: channel(0), g: channel(2), b: channel(4), alpha };
}
