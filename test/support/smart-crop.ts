import type { Sharp } from "sharp";
import smartcrop from "smartcrop";

/**
 * What the media service's `gravity=attention` (container/src/salience.ts) should cut, found here
 * the same way (smartcrop over sharp's RGBA prescale, 256 px on the shorter side) and cut by sharp
 * alone: the region of the box's aspect centred on smartcrop's crop, moved back inside the image,
 * extracted and resized to the box. The tests compare the service's output against it.
 */

interface Pixels {
  width: number;
  height: number;
  data: Uint8ClampedArray;
}
/** smartcrop's raw-pixel path, which its index.d.ts leaves out. */
const engine = smartcrop as unknown as {
  crop(image: Pixels, options: object): Promise<{ topCrop: { x: number; y: number; width: number; height: number } }>;
  ImgData: new (width: number, height: number, data: Uint8ClampedArray) => Pixels;
};
const RAW_PIXELS = {
  open: async (image: Pixels) => image,
  resample: async (image: Pixels) => image,
  getData: async (image: Pixels) => new engine.ImgData(image.width, image.height, image.data),
};

/** The region of `upright` (its pixels) that a cover cut to width x height keeps around what smartcrop finds. */
export async function smartcropRegion(upright: Sharp, width: number, height: number) {
  const size = (await upright.metadata()).autoOrient;
  const prescale = Math.min(1, 256 / Math.min(size.width, size.height), 1024 / Math.max(size.width, size.height));
  const { data, info } = await upright
    .clone()
    .resize({ width: Math.round(size.width * prescale), height: Math.round(size.height * prescale), fit: "fill" })
    .toColourspace("srgb")
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const pixels = { width: info.width, height: info.height, data: new Uint8ClampedArray(data) };
  const { topCrop } = await engine.crop(pixels, { width, height, prescale: false, imageOperations: RAW_PIXELS });
  const scale = Math.max(width / size.width, height / size.height);
  const span = { width: width / scale, height: height / scale };
  const start = (crop: number, cropSpan: number, prescaled: number, side: number, regionSpan: number) =>
    Math.min(side - regionSpan, Math.max(0, ((crop + cropSpan / 2) / prescaled) * side - regionSpan / 2));
  return {
    left: start(topCrop.x, topCrop.width, info.width, size.width, span.width),
    top: start(topCrop.y, topCrop.height, info.height, size.height, span.height),
    ...span,
  };
}

/**
 * sharp's own cut of that region, exactly width x height: the image scaled to cover the box, the
 * region's start rounded at that scale (a half pixel off moves a detailed photo's SSIM below 0.95).
 */
export async function smartcropCut(upright: Sharp, width: number, height: number): Promise<Sharp> {
  const region = await smartcropRegion(upright, width, height);
  const scale = width / region.width;
  const size = (await upright.metadata()).autoOrient;
  const scaled = { width: Math.round(size.width * scale), height: Math.round(size.height * scale) };
  const at = (start: number, side: number, span: number) => Math.min(side - span, Math.round(start * scale));
  return upright
    .clone()
    .resize({ ...scaled, fit: "fill" })
    .extract({ left: at(region.left, scaled.width, width), top: at(region.top, scaled.height, height), width, height });
}
