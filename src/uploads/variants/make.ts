import { isImageFormat, isVideoFormat } from "../../../container/src/contract";
import { ApiError, unprocessable } from "../../errors";
import { describeStoredImage, renderImage } from "../../media/image/render";
import { cancelInput, MediaServiceError, type MediaService } from "../../media/service";
import { formatOfMime } from "../../media/sniff";
import type { Database } from "../../storage/db";
import { storedFile } from "../../storage/stored-file";
import { markAnimated } from "../../storage/uploads";
import type { Variant, VariantSource } from "./plan";
import type { ServiceShare, UploadVariantLocks } from "./lock-stubs";
import type { CopyCap } from "./variant-locks";
import { transformPrefix } from "../../storage/keys";
import { deleteObjects } from "../../storage/objects";

export interface VariantDeps {
  db: Database;
  bucket: R2Bucket;
  media: MediaService;
  locks: UploadVariantLocks;
  /** The media service's share for variants (a slot per making there). */
  share: ServiceShare;
  /** Charges the client one making (its per-IP rule; 429 when spent): only an actual encode is charged. */
  charge(): Promise<void>;
  /** The requesting client's network: it holds at most one slot of the service share at a time. */
  client: string;
  /** The transform copies one upload may keep (variant-locks.ts keepCopy). */
  copyCap: CopyCap;
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
/** Makings of one upload's variants at once: a file that is slow or cannot be made holds no more. */
export const MAX_MAKINGS_PER_UPLOAD = 2;

/** The 503 of a variant that cannot be made now, with when to ask again. */
const notNow = (message: string, retryAfterSeconds = 5) =>
  new ApiError(503, message, { "Retry-After": String(retryAfterSeconds) });

/**
 * Makes `variant` of `source` and stores it, once however many requests ask at the same moment:
 * one leads and makes it, the others wait for it (variant-locks.ts) and then find it stored. A
 * variant that could not be made is answered from what was remembered, without another try, until
 * the upload's file changes.
 */
export async function ensureVariant(deps: VariantDeps, source: VariantSource, variant: Variant): Promise<Outcome> {
  for (let round = 1; round <= ROUNDS; round++) {
    const turn = await deps.locks.take(variant.key, LEASE_MS, {
      file: source.objectKey,
      maxLeads: MAX_MAKINGS_PER_UPLOAD,
    });
    if (turn === "busy") throw notNow("Resized copies of this file are being made; try again in a few seconds.");
    if (typeof turn === "object" && "failed" in turn) {
      if (turn.retryInMs === undefined) throw unprocessable(`This file cannot be resized: ${turn.failed}`);
      throw notNow(`This size cannot be made just now: ${turn.failed}.`, Math.ceil(turn.retryInMs / 1000));
    }
    if (typeof turn === "object") {
      let ended = false;
      const fail: Fail = async (message, options) => {
        ended = true;
        // Not remembered after all: the lease is still ended, so waiters need not wait it out.
        await deps.locks.fail(variant.key, turn.lease, message, options).catch(async () => {
          await deps.locks.release(variant.key, turn.lease).catch(() => {});
        });
      };
      try {
        // A lead that ended just before this one began has stored it already.
        if (await deps.bucket.head(variant.key)) return "stored";
        return await makeVariant(deps, source, variant, fail);
      } finally {
        if (!ended) await deps.locks.release(variant.key, turn.lease).catch(() => {});
      }
    }
    if (await deps.bucket.head(variant.key)) return "stored";
  }
  throw notNow("This variant could not be made just now; try again in a few seconds.");
}

type Fail = (message: string, options?: { file?: string; forMs?: number }) => Promise<void>;

/**
 * A variant whose making got no answer within the call's 60 s is not tried again for this long:
 * the time may have gone waiting in a busy container's queue, so it is not refused for good, but
 * every request for it would otherwise hold a place on the service as long again.
 */
export const TIMED_OUT_MEMORY_MS = 10 * 60_000;

/**
 * What is remembered of a failed making: a file the media service refuses (it cannot read it, or
 * it is too large) fails every width and encoding for good; a making that used the service's own
 * time limit (504) fails that variant for good; one the Worker gave up waiting for fails it for
 * TIMED_OUT_MEMORY_MS. Anything else (the service busy or restarting) may go another time.
 */
function lastingFailure(error: unknown, file: string): { message: string; file?: string; forMs?: number } | null {
  if (!(error instanceof MediaServiceError)) return null;
  if (error.timedOut) return { message: `it took too long (${error.message})`, forMs: TIMED_OUT_MEMORY_MS };
  if (error.status === 504) return { message: `it took too long (${error.message})` };
  if (error.permanent) return { message: error.message, file };
  return null;
}

/**
 * The variant made and stored. It is kept only if its file is still there once it is stored:
 * a change that removes the file removes its variants after it (previous-files.ts), so a variant
 * stored after that finds the file gone and removes itself rather than outlive it.
 */
async function makeVariant(deps: VariantDeps, source: VariantSource, variant: Variant, fail: Fail): Promise<Outcome> {
  let made: Awaited<ReturnType<typeof variantBytes>>;
  let stored: R2Object | null = null;
  const held: { slot: { release(): Promise<void> } | null } = { slot: null };
  // The service is called only within its share for variants, one slot per making.
  const media: MediaService = {
    async call(call, input, length) {
      held.slot = await deps.share.take(LEASE_MS, deps.client);
      if (!held.slot) {
        await cancelInput(input);
        throw new MediaServiceError(503, "the media service's share for variants is taken");
      }
      return deps.media.call(call, input, length);
    },
  };
  try {
    try {
      made = await variantBytes({ ...deps, media }, source, variant);
    } catch (error) {
      // Its file was replaced or removed while it was read: the caller reads the row again.
      if (!(await deps.bucket.head(source.objectKey))) return "source gone";
      const lasting = lastingFailure(error, source.objectKey);
      if (lasting) await fail(lasting.message, lasting);
      throw asApiError(error);
    }
    if (made === "original") {
      // A row from before animation was known at upload: its next requests skip this path.
      await markAnimated(deps.db, source.id, source.objectKey).catch((error) =>
        console.error(JSON.stringify({ upload: source.id, markAnimated: String(error) })),
      );
      return made;
    }
    stored = await deps.bucket.put(variant.key, made.body, { httpMetadata: { contentType: variant.mime } });
  } finally {
    await held.slot?.release().catch(() => {});
  }
  if (!(await deps.bucket.head(source.objectKey))) {
    await deps.bucket.delete(variant.key);
    return "source gone";
  }
  if (variant.transform) await keepWithinCap(deps, source, variant.key, stored?.size ?? 0);
  return made.engine === "worker" ? "made-worker" : "made-service";
}

/** The variant's bytes, or "original" for an animated image. A missing file throws (see makeVariant). */
async function variantBytes(deps: VariantDeps, source: VariantSource, variant: Variant) {
  const format = formatOfMime(source.mime);
  if (source.type === "video") {
    if (!format || !isVideoFormat(format)) throw new Error(`upload ${source.id} is a video of type ${source.mime}`);
    await deps.charge();
    const file = await storedFile(deps.bucket, source.objectKey);
    const at = variant.at === undefined ? {} : { at: variant.at / 1000 };
    const call = { operation: "videoPoster", format, width: variant.width, to: variant.encoding, ...at } as const;
    const poster = await deps.media.call(call, file.body, file.size);
    return { body: poster.body, engine: "service" as const };
  }
  const image = await describeStoredImage(deps.bucket, source.objectKey);
  // Never cut to its first frame: served whole instead.
  if (image?.animated) return "original";
  const sniffed = image?.format ?? format;
  if (!sniffed || !isImageFormat(sniffed)) throw new Error(`upload ${source.id} is an image of type ${source.mime}`);
  if (variant.transform) {
    // Cut, padded or blurred by sharp on the media service: the Worker's codecs only resize.
    await deps.charge();
    const file = await storedFile(deps.bucket, source.objectKey);
    const call = { operation: "imageTransform", format: sniffed, transform: variant.transform } as const;
    const copy = await deps.media.call(call, file.body, file.size);
    return { body: copy.body, engine: "service" as const };
  }
  const job = { kind: "variant", width: variant.width, to: variant.encoding } as const;
  await deps.charge();
  return renderImage(deps, { key: source.objectKey, format: sniffed }, job, image);
}

/**
 * Records a transform copy just stored in its upload's index and deletes the copies that no
 * longer fit the cap (the least recently served). A failure leaves the copy stored and unrecorded
 * (the next copy's keepCopy counts what the index has): logged, never the request's error.
 */
async function keepWithinCap(deps: VariantDeps, source: VariantSource, key: string, bytes: number) {
  try {
    const evicted = await deps.locks.keepCopy(key, bytes, transformPrefix(source.objectKey), deps.copyCap);
    if (evicted.length) await deleteObjects(deps.bucket, evicted);
  } catch (error) {
    console.error(JSON.stringify({ upload: source.id, keepCopy: String(error) }));
  }
}

/** The media service's refusal as the client sees it: the file cannot be made smaller, or not now. */
function asApiError(error: unknown): unknown {
  if (!(error instanceof MediaServiceError)) return error;
  if (error.permanent) return unprocessable(`This file cannot be resized: ${error.message}`);
  if (error.timedOut) return notNow(`This size cannot be made just now: ${error.message}.`, TIMED_OUT_MEMORY_MS / 1000);
  return notNow("Resized copies cannot be made just now; try again in a few seconds.");
}
