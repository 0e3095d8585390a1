import type { Sharp } from "sharp";
import smartcrop from "smartcrop";

/**
 * What the media service's `gravity=attention` (container/src/salience.ts) should cut, found here
 * the same way (smartcrop over sharp's RGBA prescale, 256 px on the shorter side) and cut by sharp
 * alone: the region of the box's aspect centred on smartcrop's crop, moved back inside the image.
 * The tests compare the service's output against it; the benchmark reports the region.
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
  const centre = await smartcropCentre(upright, size, width, height);
  const scale = Math.max(width / size.width, height / size.height);
  const span = { width: width / scale, height: height / scale };
  const start = (point: number, side: number, regionSpan: number) =>
    Math.min(side - regionSpan, Math.max(0, point * side - regionSpan / 2));
  return { left: start(centre.x, size.width, span.width), top: start(centre.y, size.height, span.height), ...span };
}

/**
 * sharp's own cut of that region, exactly width x height: the image scaled to cover the box (its
 * sides rounded), the region's start rounded at that scale, as the service rounds them (a pixel
 * off moves a detailed photo's SSIM below 0.98).
 */
export async function smartcropCut(upright: Sharp, width: number, height: number): Promise<Sharp> {
  const size = (await upright.metadata()).autoOrient;
  const centre = await smartcropCentre(upright, size, width, height);
  const scale = Math.max(width / size.width, height / size.height);
  const scaled = {
    width: Math.max(width, Math.round(size.width * scale)),
    height: Math.max(height, Math.round(size.height * scale)),
  };
  const at = (point: number, side: number, span: number) =>
    Math.min(side - span, Math.max(0, Math.round(point * side - span / 2)));
  return upright
    .clone()
    .resize({ ...scaled, fit: "fill" })
    .extract({ left: at(centre.x, scaled.width, width), top: at(centre.y, scaled.height, height), width, height });
}

/** The centre of smartcrop's crop, as fractions of the image's width and height. */
async function smartcropCentre(upright: Sharp, size: { width: number; height: number }, width: number, height: number) {
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
  return { x: (topCrop.x + topCrop.width / 2) / info.width, y: (topCrop.y + topCrop.height / 2) / info.height };
}
