import { createRequire } from "node:module";
import { JobError } from "./run";

/** The part of libheif-js (libheif and libde265 compiled to WebAssembly) that decoding needs. */
interface HeifImage {
  get_width(): number;
  get_height(): number;
  display(target: { data: Uint8ClampedArray; width: number; height: number }, done: (result: unknown) => void): void;
  free(): void;
}
interface Libheif {
  ready?: Promise<void>;
  HeifDecoder: new () => { decode(bytes: Uint8Array): HeifImage[] };
}

let loaded: Libheif | undefined;

/** Loaded on first use: the module is 2 MB of WebAssembly that most jobs never need. */
async function libheif(): Promise<Libheif> {
  if (!loaded) {
    const module = createRequire(import.meta.url)("libheif-js/wasm-bundle") as Libheif;
    await module.ready;
    loaded = module;
  }
  return loaded;
}

export interface RawImage {
  data: Buffer;
  width: number;
  height: number;
  channels: 3 | 4;
}

/**
 * The primary image of a HEIC/HEIF file (HEVC, which sharp's prebuilt libvips cannot decode) as
 * upright 8-bit pixels: libheif applies the file's rotation and mirroring while decoding. The
 * pixel limit is checked on the declared size before any pixel memory is taken.
 */
export async function decodeHeic(bytes: Uint8Array, maxPixels: number): Promise<RawImage> {
  const { HeifDecoder } = await libheif();
  let images: HeifImage[];
  try {
    images = new HeifDecoder().decode(bytes);
  } catch (error) {
    throw new JobError(422, `unreadable HEIF: ${String(error)}`);
  }
  try {
    const image = images[0];
    if (!image) throw new JobError(422, "the HEIF file holds no image");
    const width = image.get_width();
    const height = image.get_height();
    if (!(width > 0 && height > 0)) throw new JobError(422, "the HEIF image has no size");
    if (width * height > maxPixels) throw new JobError(422, `image of ${width}x${height} px is over the pixel limit`);
    const data = new Uint8ClampedArray(width * height * 4);
    await new Promise<void>((resolve, reject) =>
      image.display({ data, width, height }, (result) =>
        result ? resolve() : reject(new JobError(422, "HEIF image could not be decoded")),
      ),
    );
    return opaque(data)
      ? { data: dropAlpha(data), width, height, channels: 3 }
      : { data: Buffer.from(data.buffer), width, height, channels: 4 };
  } finally {
    for (const image of images) image.free();
  }
}

const opaque = (rgba: Uint8ClampedArray) => {
  for (let i = 3; i < rgba.length; i += 4) if (rgba[i] !== 255) return false;
  return true;
};

/** libheif always hands out RGBA; a photo without transparency should not be encoded with it. */
function dropAlpha(rgba: Uint8ClampedArray): Buffer {
  const rgb = Buffer.allocUnsafe((rgba.length / 4) * 3);
  for (let i = 0, o = 0; i < rgba.length; i += 4, o += 3) {
    rgb[o] = rgba[i]!;
    rgb[o + 1] = rgba[i + 1]!;
    rgb[o + 2] = rgba[i + 2]!;
  }
  return rgb;
}
