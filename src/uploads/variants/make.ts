import { isImageFormat, isVideoFormat } from "../../../container/src/contract";
import { ApiError, unprocessable } from "../../errors";
import { describeStoredImage, renderImage } from "../../media/image/render";
import { MediaServiceError, type MediaService } from "../../media/service";
import { formatOfMime } from "../../media/sniff";
import { storedFile } from "../../storage/stored-file";
import type { Variant, VariantSource } from "./plan";
import type { VariantLeases } from "./variant-leases";

export interface VariantDeps {
  bucket: R2Bucket;
  media: MediaService;
  leases: VariantLeases;
}

/**
 * How a variant request found its variant: made by this request (in the Worker or by the media
 * service), made by another request it waited for ("stored"), or there is none to make: the file
 * is animated ("original"), or it was replaced or removed meanwhile ("source gone").
 */
export type Outcome = "made-worker" | "made-service" | "stored" | "original" | "source gone";

/**
 * The longest a variant's making may take, the media service's call included: a variant is made
 * while its first request waits. Its lease lasts a little longer, so a lead that dies is replaced.
 */
export const VARIANT_CALL_TIMEOUT_MS = 60_000;
const LEASE_MS = VARIANT_CALL_TIMEOUT_MS + 10_000;
/** A lead that ended without storing the variant (it failed) is taken over this many times. */
const ROUNDS = 3;

/**
 * Makes `variant` of `source` and stores it, once however many requests ask at the same moment:
 * one leads and makes it, the others wait for it (variant-locks.ts) and then find it stored.
 */
export async function ensureVariant(deps: VariantDeps, source: VariantSource, variant: Variant): Promise<Outcome> {
  for (let round = 1; round <= ROUNDS; round++) {
    const turn = await deps.leases.take(variant.key, LEASE_MS);
    if (typeof turn === "object") {
      try {
        // A lead that ended just before this one began has stored it already.
        if (await deps.bucket.head(variant.key)) return "stored";
        return await makeVariant(deps, source, variant);
      } finally {
        await deps.leases.release(variant.key, turn.lease).catch(() => {});
      }
    }
    if (await deps.bucket.head(variant.key)) return "stored";
  }
  throw new ApiError(503, "This variant could not be made just now; try again in a few seconds.", {
    "Retry-After": "5",
  });
}

/**
 * The variant made and stored. It is kept only if its file is still there once it is stored:
 * a change that removes the file removes its variants after it (previous-files.ts), so a variant
 * stored after that finds the file gone and removes itself rather than outlive it.
 */
async function makeVariant(deps: VariantDeps, source: VariantSource, variant: Variant): Promise<Outcome> {
  let made: Awaited<ReturnType<typeof render>>;
  try {
    made = await render(deps, source, variant);
  } catch (error) {
    // Its file was replaced or removed while it was read: the caller reads the row again.
    if (!(await deps.bucket.head(source.objectKey))) return "source gone";
    throw asApiError(error);
  }
  if (made === "original") return made;
  await deps.bucket.put(variant.key, made.body, { httpMetadata: { contentType: variant.mime } });
  if (!(await deps.bucket.head(source.objectKey))) {
    await deps.bucket.delete(variant.key);
    return "source gone";
  }
  return made.engine === "worker" ? "made-worker" : "made-service";
}

/** The variant's bytes, or "original" for an animated image. A missing file throws (see makeVariant). */
async function render(deps: VariantDeps, source: VariantSource, variant: Variant) {
  const format = formatOfMime(source.mime);
  if (source.type === "video") {
    if (!format || !isVideoFormat(format)) throw new Error(`upload ${source.id} is a video of type ${source.mime}`);
    const file = await storedFile(deps.bucket, source.objectKey);
    const call = { operation: "videoPoster", format, width: variant.width, to: variant.encoding } as const;
    const poster = await deps.media.call(call, file.body, file.size);
    return { body: poster.body, engine: "service" as const };
  }
  const image = await describeStoredImage(deps.bucket, source.objectKey);
  // Never cut to its first frame: served whole instead.
  if (image?.animated) return "original";
  const sniffed = image?.format ?? format;
  if (!sniffed || !isImageFormat(sniffed)) throw new Error(`upload ${source.id} is an image of type ${source.mime}`);
  const job = { kind: "variant", width: variant.width, to: variant.encoding } as const;
  return renderImage(deps, { key: source.objectKey, format: sniffed }, job, image);
}

/** The media service's refusal as the client sees it: the file cannot be made smaller, or not now. */
function asApiError(error: unknown): unknown {
  if (!(error instanceof MediaServiceError)) return error;
  if (error.permanent) return unprocessable(`This file cannot be resized: ${error.message}`);
  return new ApiError(503, "Resized copies cannot be made just now; try again in a few seconds.", {
    "Retry-After": "5",
  });
}
