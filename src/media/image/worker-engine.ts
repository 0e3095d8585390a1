import { isolateMemory } from "../../limits/isolate-memory";
import {
  needsResample,
  planImageJob,
  thumbnailGeometry,
  type ImageJob,
  type SourceImage,
  type WorkerPlan,
} from "./budget";
import { codecMemory, decode, dropIdleCodecs, encodeWebp, type Pixels } from "./codecs";
import { applyOrientation, resize, shrinkByFactor } from "./pixels";

interface RenderedImage {
  bytes: Uint8Array;
  width: number;
  height: number;
  /**
   * What was encoded, for a thumbnail only: its placeholder is made of these, not of a second
   * decode. Never a larger image's, whose pixels would outlive the memory reserved for them.
   */
  pixels?: Pixels;
}

/** Thumbnails and WebP variants alike; the media service uses the same. */
export const THUMBNAIL_QUALITY = 80;

/**
 * Runs `job` in this isolate when the budget rule lets it, reading the file only then. Resolves
 * the plan, and the result when the Worker did the work; a failure here is the caller's to
 * hand to the media service.
 *
 * Jobs never queue behind one another: a request waiting on a promise that another request
 * settles can be left stuck in workerd. Each job is planned against what the others have
 * reserved (their buffers and their codecs' growth) and reserves its own before its first await,
 * so jobs that run side by side are counted in full, and one that does not fit goes to the
 * media service.
 */
export async function renderInWorker(
  image: SourceImage,
  job: ImageJob,
  read: () => Promise<Uint8Array>,
): Promise<{ plan: WorkerPlan; result?: RenderedImage }> {
  let plan = planImageJob(image, job, codecMemory(), isolateMemory.reserved);
  // Short of room only because of idle codecs: they are dropped (made again when next needed)
  // before the work is sent away.
  if (plan.where === "service" && plan.peakBytes !== undefined && dropIdleCodecs())
    plan = planImageJob(image, job, codecMemory(), isolateMemory.reserved);
  if (plan.where === "service") return { plan };
  // Planned against this very account, with no await between: it fits. Its codecs' growth
  // stays resident afterwards, counted from then on through their memory.
  const reservation = isolateMemory.tryReserve(plan.addedBytes);
  if (!reservation) return { plan: { where: "service", reason: "the isolate's memory is taken by other work" } };
  try {
    return { plan, result: await renderUncounted(image, job, await read()) };
  } finally {
    reservation.release();
  }
}

/** The work itself, whatever its cost: callers go through renderInWorker (benchmarks excepted). */
export async function renderUncounted(image: SourceImage, job: ImageJob, bytes: Uint8Array): Promise<RenderedImage> {
  const decoded = await decode(image.format as "jpeg" | "png" | "webp", bytes);
  if (decoded.width !== image.storedWidth || decoded.height !== image.storedHeight) {
    throw new Error(
      `decoded ${decoded.width}x${decoded.height}, header said ${image.storedWidth}x${image.storedHeight}`,
    );
  }
  let pixels = decoded;
  if (job.kind !== "webp") {
    // A thumbnail, or a WebP variant: the same scaling, box averaging first, then resampling.
    const g = thumbnailGeometry(image.storedWidth, image.storedHeight, image.orientation, job.width);
    pixels = shrinkByFactor(decoded, g.shrinkFactor);
    if (needsResample(g)) pixels = resize(pixels, g.storedTarget.width, g.storedTarget.height);
  }
  // Turned upright after any scaling, on the fewest pixels.
  pixels = applyOrientation(pixels, image.orientation);
  const quality = job.kind === "webp" ? (job.quality as number) : THUMBNAIL_QUALITY;
  const encoded = await encodeWebp(pixels, quality);
  const kept = job.kind === "thumbnail" ? pixels : undefined;
  return { bytes: encoded, width: pixels.width, height: pixels.height, pixels: kept };
}
