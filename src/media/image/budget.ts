import { MiB } from "../../model/spec-limits";
import { ISOLATE_BASELINE_BYTES, ISOLATE_LIMIT_BYTES, ISOLATE_MEMORY_BUDGET_BYTES } from "../../limits/isolate-memory";
import type { VariantEncoding } from "../../../container/src/contract";
import type { Codec } from "./codecs";
import { orientedSize } from "./pixels";

/**
 * The rule that decides, per image and from its header alone, whether image work fits in the
 * Worker's memory or goes to the media service.
 *
 * A Worker isolate may use 128 MiB, shared by every request it serves (src/limits/isolate-memory.ts
 * keeps the account). Each WebAssembly codec reserves about 16 MiB when it loads, grows with the
 * images it handles and never shrinks, and it stays loaded for the life of the isolate. So a job
 * fits when
 *
 *   baseline + (every loaded codec's memory, grown to what this job needs) + this job's JS buffers
 *     + what other work in the isolate has reserved
 *
 * stays within the isolate's budget, which leaves a margin below the limit. Jobs running side by
 * side each reserve their buffers and growth in that account (worker-engine.ts), so "what other
 * work has reserved" includes them. The models below are upper bounds fitted to measurements of
 * these codec builds (test/worker/media/image-budget.test.ts checks them against the real memory
 * of each codec at the boundary sizes).
 */
export { ISOLATE_BASELINE_BYTES, ISOLATE_LIMIT_BYTES };
export const WORKER_IMAGE_BUDGET_BYTES = ISOLATE_MEMORY_BUDGET_BYTES;

export interface SourceImage {
  format: string;
  /** Pixel size as stored (before EXIF orientation). */
  storedWidth: number;
  storedHeight: number;
  orientation: number;
  animated: boolean;
  /** Why the Worker's codecs cannot decode this file although they know its format, if so. */
  unsupported?: string;
  /** Size of the encoded file. */
  bytes: number;
}

/**
 * A thumbnail (WebP, `width` wide at most), the whole image as WebP, or a variant: the image at
 * most `width` wide in `to` (src/uploads/variants). The Worker encodes WebP only; the other
 * encodings are the media service's.
 */
export type ImageJob =
  | { kind: "thumbnail"; width: number }
  | { kind: "webp"; quality: number | "lossless" }
  | { kind: "variant"; width: number; to: VariantEncoding };

/** Where a thumbnail's pixels come from: every size along the way, so cost and work agree. */
interface ThumbnailGeometry {
  /** The thumbnail, upright: `width` at most the requested width, never wider than the image. */
  width: number;
  height: number;
  /** Size to resample to, in the stored orientation (the thumbnail before it is turned upright). */
  storedTarget: { width: number; height: number };
  /** Integer box-averaging factor applied before resampling (1: none). */
  shrinkFactor: number;
  /** Size after box averaging: what the resampler receives. */
  shrunk: { width: number; height: number };
}

export function thumbnailGeometry(
  storedWidth: number,
  storedHeight: number,
  orientation: number,
  maxWidth: number,
): ThumbnailGeometry {
  const upright = orientedSize(storedWidth, storedHeight, orientation);
  const width = Math.min(maxWidth, upright.width);
  const height = Math.max(1, Math.round((upright.height * width) / upright.width));
  const storedTarget = orientation >= 5 ? { width: height, height: width } : { width, height };
  // Averaging down to 1.5-3x the target keeps the resampler's input small and its output sharp.
  const shrinkFactor = Math.max(
    1,
    Math.min(
      Math.floor(storedWidth / (storedTarget.width * 1.5)),
      Math.floor(storedHeight / (storedTarget.height * 1.5)),
    ),
  );
  const shrunk = { width: Math.ceil(storedWidth / shrinkFactor), height: Math.ceil(storedHeight / shrinkFactor) };
  return { width, height, storedTarget, shrinkFactor, shrunk };
}

/** False when box averaging already gives the target size (or the image is the target size). */
export const needsResample = (g: ThumbnailGeometry) =>
  g.shrunk.width !== g.storedTarget.width || g.shrunk.height !== g.storedTarget.height;

/** WebAssembly memory of a codec after a job: `pixels` it handles, from `input` encoded bytes. */
const CODEC_MEMORY: Record<Codec, (pixels: number, input: number) => number> = {
  "jpeg-decode": (pixels, input) => Math.max(16.2 * MiB, 5 * pixels + input + MiB),
  "webp-decode": (pixels, input) => Math.max(16 * MiB, 5.5 * pixels + input + MiB),
  "png-decode": (pixels, input) => Math.max(1.1 * MiB, 8 * pixels + 2 * input + 2 * MiB),
  "webp-encode": (pixels) => Math.max(16 * MiB, 14.5 * pixels + MiB),
  resize: (pixels) => Math.max(1.1 * MiB, 28 * pixels + 4 * MiB),
};

export const codecMemoryModel = (codec: Codec, pixels: number, input = 0) => CODEC_MEMORY[codec](pixels, input);

/**
 * The wasm-bindgen codecs (png, resize) keep their one instance for the isolate's life, so what
 * they grow to is never given back to requests: a job that would grow one past this goes to the
 * media service. (The Emscripten codecs are dropped when requests need their room.)
 */
const KEPT_CODEC_MAX_BYTES = 32 * MiB;
const KEPT_CODECS: ReadonlySet<Codec> = new Set(["png-decode", "resize"]);

const DECODERS: Record<string, Codec> = { jpeg: "jpeg-decode", png: "png-decode", webp: "webp-decode" };

export type WorkerPlan =
  | {
      where: "worker";
      peakBytes: number;
      codecs: Map<Codec, number> /** What the job adds while it runs: its buffers and its codecs' growth. */;
      addedBytes: number;
    }
  | { where: "service"; reason: string; peakBytes?: number };

/**
 * Plans `job` on `image` given the codec memory this isolate already holds (`loaded`, bytes per
 * loaded codec) and what other work in it has reserved (`reservedElsewhere`). Pure: the caller
 * passes what it measured.
 */
export function planImageJob(
  image: SourceImage,
  job: ImageJob,
  loaded: ReadonlyMap<Codec, number>,
  reservedElsewhere = 0,
): WorkerPlan {
  const decoder = DECODERS[image.format];
  if (!decoder) return { where: "service", reason: `no ${image.format} decoder in the Worker` };
  if (image.animated) return { where: "service", reason: "animated" };
  if (image.unsupported) return { where: "service", reason: image.unsupported };
  if (job.kind === "webp" && job.quality === "lossless")
    return { where: "service", reason: "lossless WebP needs about 46 B/px" };
  if (job.kind === "variant" && job.to !== "webp")
    return { where: "service", reason: `no ${job.to} encoder in the Worker` };

  const pixels = image.storedWidth * image.storedHeight;
  // What this job needs of each codec it uses (pixels through it), and its own JS buffers.
  const needs = new Map<Codec, number>([[decoder, codecMemoryModel(decoder, pixels, image.bytes)]]);
  let jsBytes = image.bytes + 4 * pixels;
  if (job.kind !== "webp") {
    const g = thumbnailGeometry(image.storedWidth, image.storedHeight, image.orientation, job.width);
    const shrunk = g.shrunk.width * g.shrunk.height;
    const thumb = g.width * g.height;
    if (needsResample(g)) needs.set("resize", codecMemoryModel("resize", shrunk));
    needs.set("webp-encode", codecMemoryModel("webp-encode", thumb));
    // Box-averaged copy, resampled copy, upright copy, encoded output (at most raw size).
    jsBytes += 4 * shrunk + 3 * 4 * thumb;
  } else {
    needs.set("webp-encode", codecMemoryModel("webp-encode", pixels));
    // Upright copy when turned, encoded output (a lossy WebP is well under 1 B/px).
    jsBytes += (image.orientation > 1 ? 4 * pixels : 0) + pixels;
  }

  for (const [codec, bytes] of needs) {
    if (KEPT_CODECS.has(codec) && bytes > KEPT_CODEC_MAX_BYTES) {
      return {
        where: "service",
        reason: `${codec} would keep ${(bytes / MiB).toFixed(1)} MiB for good (at most ${KEPT_CODEC_MAX_BYTES / MiB})`,
      };
    }
  }
  const codecs = new Map(loaded);
  let growth = 0;
  for (const [codec, bytes] of needs) {
    const before = loaded.get(codec) ?? 0;
    codecs.set(codec, Math.max(bytes, before));
    growth += Math.max(0, bytes - before);
  }
  let peakBytes = ISOLATE_BASELINE_BYTES + jsBytes + reservedElsewhere;
  for (const bytes of codecs.values()) peakBytes += bytes;
  if (peakBytes > WORKER_IMAGE_BUDGET_BYTES) {
    const others = reservedElsewhere ? `, ${(reservedElsewhere / MiB).toFixed(1)} MiB of it held by other work` : "";
    return {
      where: "service",
      reason: `needs ${(peakBytes / MiB).toFixed(1)} MiB of the Worker's ${WORKER_IMAGE_BUDGET_BYTES / MiB}${others}`,
      peakBytes,
    };
  }
  return { where: "worker", peakBytes, codecs, addedBytes: jsBytes + growth };
}
