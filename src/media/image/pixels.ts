import { resampler, type Pixels } from "./codecs";

/*
 * What is done to decoded pixels between the decoder and the encoder (codecs.ts): averaged down,
 * resampled, turned upright.
 */

/**
 * Averages `factor` x `factor` blocks (weighted by alpha, so transparent pixels do not bleed
 * their colour). Cheap enough to run at full size in JS, it brings an image near its final size
 * before the WebAssembly resampler, whose memory grows with its input (about 28 bytes a pixel).
 */
export function shrinkByFactor(pixels: Pixels, factor: number): Pixels {
  if (factor <= 1) return pixels;
  const { data, width, height } = pixels;
  const outWidth = Math.ceil(width / factor);
  const outHeight = Math.ceil(height / factor);
  const out = new Uint8ClampedArray(outWidth * outHeight * 4);
  const sums = new Float64Array(outWidth * 5);
  for (let oy = 0; oy < outHeight; oy++) {
    sums.fill(0);
    const yEnd = Math.min(height, (oy + 1) * factor);
    for (let y = oy * factor; y < yEnd; y++) {
      let i = y * width * 4;
      for (let x = 0; x < width; x++, i += 4) {
        const s = ((x / factor) | 0) * 5;
        const a = data[i + 3]!;
        sums[s]! += data[i]! * a;
        sums[s + 1]! += data[i + 1]! * a;
        sums[s + 2]! += data[i + 2]! * a;
        sums[s + 3]! += a;
        sums[s + 4]! += 1;
      }
    }
    for (let ox = 0, o = oy * outWidth * 4; ox < outWidth; ox++, o += 4) {
      const s = ox * 5;
      const alpha = sums[s + 3]!;
      if (alpha > 0) {
        out[o] = sums[s]! / alpha;
        out[o + 1] = sums[s + 1]! / alpha;
        out[o + 2] = sums[s + 2]! / alpha;
      }
      out[o + 3] = alpha / sums[s + 4]!;
    }
  }
  return { data: out, width: outWidth, height: outHeight };
}

/** Lanczos3 resampling, in premultiplied alpha so transparent edges do not darken. */
export function resize(pixels: Pixels, width: number, height: number): Pixels {
  const input = new Uint8Array(pixels.data.buffer, pixels.data.byteOffset, pixels.data.byteLength);
  const output = resampler()(input, pixels.width, pixels.height, width, height, 3, true, false);
  return { data: new Uint8ClampedArray(output.buffer, output.byteOffset, output.byteLength), width, height };
}

/** Size after EXIF orientation `orientation` (1-8) is applied: 5-8 swap the axes. */
export const orientedSize = (width: number, height: number, orientation: number) =>
  orientation >= 5 ? { width: height, height: width } : { width, height };

/** Turns stored pixels upright as EXIF orientation 1-8 says (TIFF/EXIF 2.3 tag 0x0112). */
export function applyOrientation(pixels: Pixels, orientation: number): Pixels {
  if (orientation <= 1 || orientation > 8) return pixels;
  const { width: w, height: h } = pixels;
  const source = new Uint32Array(pixels.data.buffer, pixels.data.byteOffset, w * h);
  const size = orientedSize(w, h, orientation);
  const out = new Uint32Array(size.width * size.height);
  // For each output pixel (u, v), the stored pixel it shows.
  const from: (u: number, v: number) => number = [
    (u: number, v: number) => v * w + u,
    (u: number, v: number) => v * w + (w - 1 - u),
    (u: number, v: number) => (h - 1 - v) * w + (w - 1 - u),
    (u: number, v: number) => (h - 1 - v) * w + u,
    (u: number, v: number) => u * w + v,
    (u: number, v: number) => (h - 1 - u) * w + v,
    (u: number, v: number) => (h - 1 - u) * w + (w - 1 - v),
    (u: number, v: number) => u * w + (w - 1 - v),
  ][orientation - 1]!;
  let o = 0;
  for (let v = 0; v < size.height; v++) for (let u = 0; u < size.width; u++) out[o++] = source[from(u, v)]!;
  return { data: new Uint8ClampedArray(out.buffer), ...size };
}
