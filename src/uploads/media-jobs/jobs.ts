import { randomBase62 } from "../../crypto";
import { MediaServiceError, type MediaService } from "../../media/service";
import { MEDIA_CALL_TIMEOUT_MS } from "../../media/timeouts";
import {
  claimMediaJobWithUpload,
  deleteMediaJob,
  dueMediaJobs,
  failExhaustedMediaJobs,
  finishMediaJob,
  type NewMediaJob,
} from "../../storage/media-jobs";
import { deleteObjects } from "../../storage/objects";
import { swapUploadFile } from "../../storage/uploads";
import type { UploadDeps } from "../upload-deps";
import { processImage, processVideo } from "./processing";

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
/** A job's first run is the one started right after the upload; the cron job waits this long before stepping in. */
const FIRST_RUN_GRACE_MS = 2 * 60_000;

export interface ProcessDeps extends UploadDeps {
  media: MediaService;
  /** First retry delay; each later one doubles, up to an hour. */
  retryBaseMs: number;
}

/**
 * The job for a newly stored file of the upload, recorded with the statement that points the
 * upload at that file, just before it (storage/media-jobs.ts, recordWithJob).
 */
export function planProcessing(deps: UploadDeps, uploadId: string, sourceKey: string): NewMediaJob {
  const now = deps.now();
  return { id: randomBase62(16), uploadId, sourceKey, now, firstAttemptAt: now + FIRST_RUN_GRACE_MS };
}

export const cancelProcessing = (deps: UploadDeps, jobId: string) => deleteMediaJob(deps.db, jobId);

const backoff = (deps: ProcessDeps, attempt: number) => Math.min(60 * 60_000, deps.retryBaseMs * 2 ** (attempt - 1));

export async function runMediaJob(deps: ProcessDeps, jobId: string): Promise<void> {
  const claimed = await claimMediaJobWithUpload(deps.db, jobId, deps.now(), LEASE_MS, MAX_ATTEMPTS);
  if (!claimed) return;
  const { job, upload } = claimed;
  const written: string[] = [];
  try {
    if (upload?.objectKey === job.sourceKey) {
      const file = upload.type === "video" ? await processVideo(deps, upload, written) : await processImage(deps, upload, written);
      const before = await swapUploadFile(deps.db, upload.id, job.sourceKey, file, deps.now());
      if (before) {
        // The new files are the upload's now: nothing below may remove them.
        written.length = 0;
        const old = [before.objectKey, before.thumbKey].filter((k): k is string => !!k && k !== file.objectKey && k !== file.thumbKey);
        // Removed with retries, since records of them are harmless only once they are gone. Left
        // behind if every try fails: records of them go stale within RECORD_TTL_MS and the cron
        // job's sweep removes files nothing points at.
        try {
          if (old.length) await deleteObjects(deps.bucket, old);
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

/** The cron job's part: re-drive jobs whose first run failed, crashed or never happened. */
export async function redriveMediaJobs(deps: ProcessDeps, limit = 10): Promise<number> {
  await failExhaustedMediaJobs(deps.db, deps.now(), MAX_ATTEMPTS);
  const due = await dueMediaJobs(deps.db, deps.now(), MAX_ATTEMPTS, limit);
  for (const { id } of due) await runMediaJob(deps, id);
  return due.length;
}
