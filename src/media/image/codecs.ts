// First: the location stand-in the glue modules below would otherwise set half of.
import "./location-stand-in";
import jpegDecoderFactory from "@jsquash/jpeg/codec/dec/mozjpeg_dec.js";
import jpegDecoderWasm from "@jsquash/jpeg/codec/dec/mozjpeg_dec.wasm";
import { initSync as initPng, decode as pngDecode } from "@jsquash/png/codec/pkg/squoosh_png.js";
// @ts-expect-error the package's .wasm.d.ts types the instance's exports; the bundler gives the module
import pngWasm from "@jsquash/png/codec/pkg/squoosh_png_bg.wasm";
import { initSync as initResize, resize as wasmResize } from "@jsquash/resize/lib/resize/pkg/squoosh_resize.js";
// @ts-expect-error as above
import resizeWasm from "@jsquash/resize/lib/resize/pkg/squoosh_resize_bg.wasm";
import webpDecoderFactory from "@jsquash/webp/codec/dec/webp_dec.js";
import webpDecoderWasm from "@jsquash/webp/codec/dec/webp_dec.wasm";
import webpEncoderFactory from "@jsquash/webp/codec/enc/webp_enc_simd.js";
import webpEncoderWasm from "@jsquash/webp/codec/enc/webp_enc_simd.wasm";
import { defaultOptions as webpDefaults } from "@jsquash/webp/meta.js";
import { isolateMemory } from "../../limits/isolate-memory";

/** Decoded RGBA pixels, 4 bytes a pixel, rows top to bottom. */
export interface Pixels {
  data: Uint8ClampedArray;
  width: number;
  height: number;
}

/**
 * The WebAssembly image codecs that run inside the Worker (jSquash builds of mozjpeg, libwebp
 * and the Rust png and resize crates). Each is instantiated on first use from the module the
 * bundler compiled, and stays: WebAssembly memory only ever grows. Every instance's memory is
 * recorded, so the budget rule (budget.ts) decides from what this isolate really holds.
 */
export const CODECS = ["jpeg-decode", "png-decode", "webp-decode", "webp-encode", "resize"] as const;
export type Codec = (typeof CODECS)[number];

const memories = new Map<Codec, WebAssembly.Memory>();
// Codec memory never shrinks: the isolate's account counts it as resident. When requests need the
// room, the Emscripten codecs are dropped (their memory goes with their last reference) and made
// again by the next job that uses them; the wasm-bindgen ones cannot be, and the budget rule
// bounds their growth instead (budget.ts).
isolateMemory.addResident(
  () => {
    let bytes = 0;
    for (const memory of memories.values()) bytes += memory.buffer.byteLength;
    return bytes;
  },
  () => void dropIdleCodecs(),
);

/**
 * Drops the Emscripten codecs: made again by the next job that uses one. A codec is in use only
 * within a synchronous call (callEmscripten), so between a job's awaits every one is idle, and a
 * job that used one has reserved what it grew. Whether any was dropped.
 */
export function dropIdleCodecs(): boolean {
  const loaded = [...emscripten.keys()];
  for (const codec of loaded) forget(codec);
  return loaded.length > 0;
}

/** Bytes of WebAssembly memory each loaded codec holds now. */
export function codecMemory(): Map<Codec, number> {
  return new Map([...memories].map(([codec, memory]) => [codec, memory.buffer.byteLength]));
}

function recordMemory(codec: Codec, exports: WebAssembly.Exports) {
  const memory = Object.values(exports).find((value) => value instanceof WebAssembly.Memory);
  if (!memory) throw new Error(`codec ${codec} exports no memory`);
  memories.set(codec, memory as WebAssembly.Memory);
}

interface EmscriptenCodec {
  decode?(data: BufferSource, preserveOrientation?: boolean): Pixels | null;
  encode?(data: Uint8ClampedArray, width: number, height: number, options: object): Uint8Array | null;
}

type EmscriptenFactory = (options: object) => Promise<EmscriptenCodec>;

const emscripten = new Map<Codec, Promise<EmscriptenCodec>>();

/** Emscripten builds: instantiated synchronously from the compiled module (no fetch, no eval). */
function loadEmscripten(codec: Codec, factory: unknown, wasm: WebAssembly.Module): Promise<EmscriptenCodec> {
  let loading = emscripten.get(codec);
  if (!loading) {
    loading = (factory as EmscriptenFactory)({
      noInitialRun: true,
      instantiateWasm(imports: WebAssembly.Imports, done: (instance: WebAssembly.Instance) => void) {
        const instance = new WebAssembly.Instance(wasm, imports);
        recordMemory(codec, instance.exports);
        done(instance);
        return instance.exports;
      },
    });
    // A failed load may be retried by the next job.
    loading.catch(() => emscripten.delete(codec));
    emscripten.set(codec, loading);
  }
  return loading;
}

const bindgenLoaded = new Set<Codec>();

/** wasm-bindgen builds keep their instance in the glue module; `initSync` makes it once. */
function loadBindgen(
  codec: Codec,
  init: (module: WebAssembly.Module) => WebAssembly.Exports,
  wasm: WebAssembly.Module,
) {
  if (bindgenLoaded.has(codec)) return;
  recordMemory(codec, init(wasm));
  bindgenLoaded.add(codec);
}

class CodecError extends Error {
  override name = "CodecError";
}

/**
 * An Emscripten codec that failed may have exited its runtime: drop it, so the next job
 * instantiates a new one and the old memory goes with its last reference.
 */
function forget(codec: Codec) {
  emscripten.delete(codec);
  memories.delete(codec);
}

async function callEmscripten<T>(
  codec: Codec,
  factory: unknown,
  wasm: WebAssembly.Module,
  call: (c: EmscriptenCodec) => T,
): Promise<T> {
  const instance = await loadEmscripten(codec, factory, wasm);
  try {
    return call(instance);
  } catch (error) {
    forget(codec);
    // Emscripten's exit() throws an ExitStatus, which is not an Error but has a message.
    throw new CodecError(`${codec} failed: ${(error as { message?: string })?.message ?? String(error)}`);
  }
}

/** Decodes to RGBA in the stored orientation (EXIF orientation is applied by the caller). */
export async function decode(format: "jpeg" | "png" | "webp", bytes: Uint8Array): Promise<Pixels> {
  let pixels: Pixels | null | undefined;
  if (format === "png") {
    loadBindgen("png-decode", initPng as never, pngWasm);
    pixels = pngDecode(bytes);
  } else if (format === "jpeg") {
    pixels = await callEmscripten("jpeg-decode", jpegDecoderFactory, jpegDecoderWasm, (c) => c.decode!(bytes, false));
  } else {
    pixels = await callEmscripten("webp-decode", webpDecoderFactory, webpDecoderWasm, (c) => c.decode!(bytes));
  }
  if (!pixels) throw new CodecError(`the ${format} data could not be decoded`);
  return { data: pixels.data, width: pixels.width, height: pixels.height };
}

export async function encodeWebp(pixels: Pixels, quality: number): Promise<Uint8Array> {
  const encoded = await callEmscripten("webp-encode", webpEncoderFactory, webpEncoderWasm, (c) =>
    c.encode!(pixels.data, pixels.width, pixels.height, { ...webpDefaults, quality }),
  );
  if (!encoded) throw new CodecError("WebP encoding failed");
  return encoded;
}

/** The resize crate's resampler, its instance made on first use (pixels.ts resizes with it). */
export function resampler(): typeof wasmResize {
  loadBindgen("resize", initResize as never, resizeWasm);
  return wasmResize;
}
