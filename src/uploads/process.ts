import { randomBase62 } from "../crypto";
import { MediaServiceError, type MediaService } from "../media/service";
import type { SourceImage } from "../media/image/budget";
import { describeStoredImage, renderImage } from "../media/image/render";
import { formatOfMime, type Format } from "../media/sniff";
import { MEDIA_CALL_TIMEOUT_MS } from "../media/timeouts";
import { newObjectKey } from "../storage/keys";
import {
  claimMediaJob,
  deleteMediaJob,
  dueMediaJobs,
  failExhaustedMediaJobs,
  finishMediaJob,
  insertMediaJob,
} from "../storage/media-jobs";
import type { UploadRow } from "../storage/schema";
import { findUpload, swapUploadFile, type ProcessedFile } from "../storage/uploads";
import type { UploadDeps } from "./deps";

/**
 * Work done on a file after the upload response: videos that are not MP4/WebM become MP4,
 * MP4/WebM lose their metadata by a remux, and every video gets its dimensions and thumbnail;
 * HEIC, HEIF and TIFF images become WebP, and every image gets its thumbnail.
 *
 * The order of steps is what keeps files safe: the new files are written under new keys, then
 * one conditional UPDATE points the upload at them, and only then is the old file deleted. A
 * crash anywhere leaves the upload pointing at a complete file (old or new); the job row says
 * what is left to do and the cron job re-drives it.
 */
export const MAX_ATTEMPTS = 5;
/** A job calls the media service at most twice: the conversion (or optimisation) and the thumbnail. */
export const MEDIA_CALLS_PER_JOB = 2;
/**
 * Longer than a job's runner can take, so that no other runner takes the job over while it still
 * works: each call is abandoned at its deadline, which outlasts the service's own time limit.
 */
export const LEASE_MS = MEDIA_CALLS_PER_JOB * MEDIA_CALL_TIMEOUT_MS + 5 * 60_000;
export const THUMB_WIDTH = 280;
/** A job's first run is the one started right after the upload; the cron job waits this long before stepping in. */
const FIRST_RUN_GRACE_MS = 2 * 60_000;

export interface ProcessDeps extends UploadDeps {
  media: MediaService;
  /** First retry delay; each later one doubles, up to an hour. */
  retryBaseMs: number;
}

export function needsProcessing(file: { type: string }) {
  return file.type === "video" || file.type === "image";
}

/**
 * Images stored as WebP and never served before that: HEIC, HEIF and TIFF (the spec), and AVIF,
 * whose metadata (EXIF, XMP items) sits in the same HEIF structure and is removed the same way.
 */
const CONVERTED_TO_WEBP = new Set(["image/heic", "image/heif", "image/tiff", "image/avif"]);

/** JPG and PNG over this size are optimised to WebP unless keep_original (spec: 1 MB). */
export const OPTIMISE_OVER_BYTES = 1024 * 1024;
/** The optimised WebP replaces the original only when it is at least this much smaller. */
export const OPTIMISE_MIN_SAVING = 0.1;
/** WebP holds at most this many pixels a side: a conversion that must happen is scaled to fit. */
const WEBP_MAX_SIDE = 16383;

type WebpPlan = { quality: number | "lossless"; onlyIfSmaller: boolean } | null;

function webpPlan(upload: UploadRow, image: SourceImage | null): WebpPlan {
  if (CONVERTED_TO_WEBP.has(upload.mime)) return { quality: 82, onlyIfSmaller: false };
  // BMP carries no metadata but is uncompressed: the same pixels, losslessly compressed.
  if (upload.mime === "image/bmp") return { quality: "lossless", onlyIfSmaller: false };
  const optimisable = upload.mime === "image/jpeg" || upload.mime === "image/png";
  if (!optimisable || upload.keepOriginal || upload.size <= OPTIMISE_OVER_BYTES) return null;
  // An animated PNG would lose its animation; a wider image than WebP holds, resolution.
  if (image?.animated) return null;
  if (image && Math.max(image.storedWidth, image.storedHeight) > WEBP_MAX_SIDE) return null;
  return { quality: 82, onlyIfSmaller: true };
}

export const awaitsConversion = (upload: Pick<UploadRow, "mime">) => CONVERTED_TO_WEBP.has(upload.mime);

/** Records the job before the upload row exists, so a crash in between cannot lose it. */
export async function planProcessing(deps: UploadDeps, uploadId: string, sourceKey: string): Promise<string> {
  const id = randomBase62(16);
  const now = deps.now();
  await insertMediaJob(deps.db, { id, uploadId, sourceKey, now, firstAttemptAt: now + FIRST_RUN_GRACE_MS });
  return id;
}

export const cancelProcessing = (deps: UploadDeps, jobId: string) => deleteMediaJob(deps.db, jobId);

const backoff = (deps: ProcessDeps, attempt: number) => Math.min(60 * 60_000, deps.retryBaseMs * 2 ** (attempt - 1));

export async function runMediaJob(deps: ProcessDeps, jobId: string): Promise<void> {
  const job = await claimMediaJob(deps.db, jobId, deps.now(), LEASE_MS, MAX_ATTEMPTS);
  if (!job) return;
  const written: string[] = [];
  try {
    const upload = await findUpload(deps.db, job.uploadId, deps.now());
    if (upload?.objectKey === job.sourceKey) {
      const file = upload.type === "video" ? await processVideo(deps, upload, written) : await processImage(deps, upload, written);
      const before = await swapUploadFile(deps.db, upload.id, job.sourceKey, file, deps.now());
      if (before) {
        // The new files are the upload's now: nothing below may remove them.
        written.length = 0;
        const old = [before.objectKey, before.thumbKey].filter((k): k is string => !!k && k !== file.objectKey && k !== file.thumbKey);
        // Left behind if this fails: the cron job's sweep removes files nothing points at.
        try {
          if (old.length) await deps.bucket.delete(old);
        } catch (error) {
          console.error(JSON.stringify({ job: job.id, removePrevious: String(error) }));
        }
      } else {
        await deps.bucket.delete(written);
      }
    }
    // Done, or obsolete: the upload is gone, expired or now points at another file.
    await finishMediaJob(deps.db, job, { status: "done" }, deps.now());
  } catch (error) {
    if (written.length) await deps.bucket.delete(written).catch(() => {});
    const permanent = error instanceof MediaServiceError && error.permanent;
    const exhausted = job.attempts >= MAX_ATTEMPTS;
    const message = failure(error);
    console.error(JSON.stringify({ job: job.id, upload: job.uploadId, attempt: job.attempts, error: message }));
    await finishMediaJob(
      deps.db,
      job,
      permanent || exhausted
        ? { status: "failed", error: message }
        : { status: "pending", error: message, nextAttemptAt: deps.now() + backoff(deps, job.attempts) },
      deps.now(),
    );
  }
}

/** What a failed attempt records: with the service's status (504: its time limit ran out), since the reason alone may not say. */
function failure(error: unknown): string {
  if (error instanceof MediaServiceError && error.status) return `media service ${error.status}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

async function put(deps: ProcessDeps, key: string, body: ReadableStream | Uint8Array | null, contentType: string, written: string[]) {
  written.push(key);
  return deps.bucket.put(key, body, { httpMetadata: { contentType } });
}

/** The format the upload was sniffed as, which the media service is told to read the file as. */
function sniffedFormat(upload: Pick<UploadRow, "id" | "mime">): Format {
  const format = formatOfMime(upload.mime);
  if (!format) throw new Error(`upload ${upload.id} has a type no format gives: ${upload.mime}`);
  return format;
}

/** `operation` on a stored file, which the service reads as `format` and nothing else. */
async function callOnObject(deps: ProcessDeps, key: string, format: Format, operation: string) {
  const source = await deps.bucket.get(key);
  if (!source) throw new Error(`stored file ${key} is missing`);
  const url = new URL(operation, "http://media");
  url.searchParams.set("format", format);
  return deps.media.call(`${url.pathname}${url.search}`, source.body, source.size);
}

async function processVideo(deps: ProcessDeps, upload: UploadRow, written: string[]): Promise<ProcessedFile> {
  const keep = upload.mime === "video/mp4" || upload.mime === "video/webm";
  const format = upload.mime === "video/webm" ? "webm" : "mp4";
  // Stripping keeps the container: the input's format is the output's.
  const response = await callOnObject(deps, upload.objectKey, sniffedFormat(upload), keep ? "/video/strip" : "/video/mp4");
  const width = Number(response.headers.get("X-Media-Width")) || null;
  const height = Number(response.headers.get("X-Media-Height")) || null;
  const mime = `video/${format}`;
  const objectKey = newObjectKey(upload.id, format);
  const stored = await put(deps, objectKey, response.body, mime, written);

  return { objectKey, mime, size: stored.size, etag: stored.httpEtag, width, height, thumbKey: await videoThumbnail(deps, upload.id, objectKey, format, written) };
}

async function processImage(deps: ProcessDeps, upload: UploadRow, written: string[]): Promise<ProcessedFile> {
  const file = (await convertToWebp(deps, upload, written)) ?? {
    objectKey: upload.objectKey,
    mime: upload.mime,
    size: upload.size,
    etag: upload.etag,
    width: upload.width,
    height: upload.height,
  };
  const thumb = await renderImage(deps, { key: file.objectKey, format: sniffedFormat({ id: upload.id, mime: file.mime }) }, { kind: "thumbnail", width: THUMB_WIDTH });
  const thumbKey = newObjectKey(upload.id, "webp");
  await put(deps, thumbKey, thumb.body, "image/webp", written);
  return { ...file, thumbKey };
}

/** The image as WebP when its format calls for it; null when the original stays. */
async function convertToWebp(deps: ProcessDeps, upload: UploadRow, written: string[]) {
  const image = await describeStoredImage(deps.bucket, upload.objectKey);
  const plan = webpPlan(upload, image);
  if (!plan) return null;
  const output = await renderImage(deps, { key: upload.objectKey, format: sniffedFormat(upload) }, { kind: "webp", quality: plan.quality }, image);
  const objectKey = newObjectKey(upload.id, "webp");
  const stored = await put(deps, objectKey, output.body, "image/webp", written);
  if (plan.onlyIfSmaller && stored.size > upload.size * (1 - OPTIMISE_MIN_SAVING)) {
    await deps.bucket.delete(objectKey);
    written.splice(written.indexOf(objectKey), 1);
    return null;
  }
  return {
    objectKey,
    mime: "image/webp",
    size: stored.size,
    etag: stored.httpEtag,
    width: output.width ?? upload.width,
    height: output.height ?? upload.height,
  };
}

/** A video without a decodable first frame still gets its converted file, just no thumbnail. */
async function videoThumbnail(deps: ProcessDeps, uploadId: string, videoKey: string, format: Format, written: string[]) {
  let response: Response;
  try {
    response = await callOnObject(deps, videoKey, format, `/thumbnail?width=${THUMB_WIDTH}`);
  } catch (error) {
    if (error instanceof MediaServiceError && error.permanent) return null;
    throw error;
  }
  const thumbKey = newObjectKey(uploadId, "webp");
  await put(deps, thumbKey, response.body, "image/webp", written);
  return thumbKey;
}

/** The cron job's part: re-drive jobs whose first run failed, crashed or never happened. */
export async function redriveMediaJobs(deps: ProcessDeps, limit = 10): Promise<number> {
  await failExhaustedMediaJobs(deps.db, deps.now(), MAX_ATTEMPTS);
  const due = await dueMediaJobs(deps.db, deps.now(), MAX_ATTEMPTS, limit);
  for (const { id } of due) await runMediaJob(deps, id);
  return due.length;
}
