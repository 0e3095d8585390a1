import { randomBase62 } from "../../crypto";
import { MediaServiceError } from "../../media/service";
import { MEDIA_CALL_TIMEOUT_MS } from "../../media/timeouts";
import {
  claimMediaJobWithUpload,
  deleteMediaJob,
  finishMediaJob,
  unclaimedMediaJob,
  renewMediaJobLease,
  type NewMediaJob,
} from "../../storage/media-jobs";
import { deletePreviousFiles } from "../../storage/objects";
import { failForGood, retryLater, swapUploadFile, writeProgress } from "../../storage/upload-processing";
import type { Stores } from "../../storage/stores";
import type { JobPhase, MediaType } from "../../model/schema";
import { dailyLimitWords, failure, failureWords, ladderRefusal } from "./failure";
import { processFile } from "./processing";
import { chargeLadder, makeLadder, nextUtcDayAt, type LadderDeps } from "./ladder";
import { FILE_PHASE_PERCENT } from "../../model/ladder";
import type { MediaJobRunner } from "./runner";

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
/**
 * An attempt runs one phase of its job and calls the media service at most twice: the file's
 * conversion (or optimisation) and its thumbnail, or the video's ladder.
 */
export const MEDIA_CALLS_PER_JOB = 2;
/**
 * The longest an attempt can take: each call is abandoned at its deadline, which outlasts the
 * service's own time limit. A runner's step gets this long.
 */
export const JOB_TIME_LIMIT_MS = MEDIA_CALLS_PER_JOB * MEDIA_CALL_TIMEOUT_MS + 5 * 60_000;
/**
 * How long a runner holds its job without a sign of life. It renews the lease every
 * LEASE_RENEW_MS while it works, so a runner that dies (its isolate evicted, the Worker
 * redeployed) is noticed within this, not after a whole job's time limit.
 */
export const LEASE_MS = 2 * 60_000;
export const LEASE_RENEW_MS = 30_000;
/**
 * A job the service turned away as busy (503) waits about this long (spread) and keeps its
 * attempts: a burst of uploads must not use up the attempts of jobs that never ran. Short, as
 * the service's queue empties in seconds (it asks for 5 with Retry-After): a longer wait leaves
 * it idle while the jobs it turned away sleep.
 */
export const BUSY_RETRY_MS = 10_000;
/**
 * First retry delay after a call that never reached the service's own code or lost it midway
 * (MediaServiceError.platform: a container restarting or replaced); each later one doubles. Such
 * a failure says nothing about the file, so the job tries again soon, rather than on the slower
 * schedule kept for failures of the media work itself (MediaJobDeps.retryBaseMs), and never later
 * than that schedule would.
 */
export const PLATFORM_RETRY_MS = 30_000;
/** A job's first run is the one started right after the upload; the cron job waits this long before stepping in. */
export const FIRST_RUN_GRACE_MS = 2 * 60_000;

/**
 * How often a running conversion's progress is asked for and, when its whole percent changed,
 * written to its upload: a job's progress costs at most one D1 write per interval (and at most
 * 100 in all), however long it runs.
 */
export const PROGRESS_EVERY_MS = 5000;

export interface MediaJobDeps extends LadderDeps {
  /** Starts a job's runner (the cron job's re-drive). */
  runner: MediaJobRunner;
  /** First retry delay; each later one doubles, up to an hour. */
  retryBaseMs: number;
  /** PROGRESS_EVERY_MS, unless a test asks more often. */
  progressEveryMs: number;
}

/**
 * The job for a newly stored file of the upload, inserted in the same batch as the statement
 * that points the upload at that file, just before it (storage/media-jobs.ts, writeUploadWithJob).
 */
export function planMediaJob(deps: Stores, uploadId: string, sourceKey: string): NewMediaJob {
  const now = deps.now();
  return { id: randomBase62(16), uploadId, sourceKey, now, firstAttemptAt: now + FIRST_RUN_GRACE_MS };
}

/**
 * An upload's processing columns as a new file leaves them: "queued" when a media job is planned
 * for it, "ready" when everything was made in the request (a small image's thumbnail).
 */
export const processingPlanned = (queued: boolean, now: number) =>
  ({
    processingState: queued ? "queued" : "ready",
    processingPercent: queued ? 0 : 100,
    processingError: null,
    processingUpdatedAt: now,
  }) as const;

export const cancelMediaJob = (deps: Stores, jobId: string) => deleteMediaJob(deps.db, jobId);

const backoff = (base: number, attempt: number) => Math.min(60 * 60_000, base * 2 ** (attempt - 1));

/**
 * A retry delay spread over half to one and a half times itself. Jobs fail together (a burst the
 * service turned away, every call cut by a container restart); retried after the same delay they
 * would come back together, and a service that takes a few at a time would turn most away again.
 */
export const spread = (delay: number, random = Math.random) => Math.floor(delay * (0.5 + random()));

/**
 * What an attempt came to: "done" (or obsolete), "retry" (failed, or not due yet; the job's next
 * attempt is due in `retryInMs`, a delay rather than a time, so that a runner re-run from the top
 * sleeps the same on every run), "failed" (for good), "held" (another runner holds the job and
 * its lease has not run out), "none" (nothing to do: finished, or out of attempts), "next" (its
 * phase done, the next is due at once: a video's ladder after its file).
 */
type AttemptOutcome =
  | { outcome: "done" | "failed" | "held" | "none" | "next" }
  | { outcome: "retry"; retryInMs: number };

export async function runMediaJob(deps: MediaJobDeps, jobId: string): Promise<AttemptOutcome> {
  const claimed = await claimMediaJobWithUpload(deps.db, jobId, deps.now(), LEASE_MS, MAX_ATTEMPTS);
  if (!claimed) {
    // A runner never runs an attempt before its time: one started early (by the cron job while
    // another slept, or a step the platform retried) waits for it.
    const unclaimed = await unclaimedMediaJob(deps.db, jobId, deps.now());
    return unclaimed.state === "early"
      ? { outcome: "retry", retryInMs: unclaimed.dueInMs }
      : { outcome: unclaimed.state };
  }
  const { job, upload } = claimed;
  const heartbeat = setInterval(() => {
    renewMediaJobLease(deps.db, job, deps.now(), LEASE_MS).catch((error) =>
      console.error(JSON.stringify({ job: job.id, renewLease: String(error) })),
    );
  }, LEASE_RENEW_MS);
  try {
    return await attempt(deps, job, upload);
  } finally {
    clearInterval(heartbeat);
  }
}

type Claimed = NonNullable<Awaited<ReturnType<typeof claimMediaJobWithUpload>>>;

/** The share of a video's `processing.percent` each phase reports into (FILE_PHASE_PERCENT). */
const PHASE_SHARE: Record<JobPhase, { from: number; to: number }> = {
  file: { from: 0, to: FILE_PHASE_PERCENT },
  ladder: { from: FILE_PHASE_PERCENT, to: 100 },
};

/**
 * Writes a running job's figures to its upload, each only when its whole percent changed: the
 * service's 0-100 scaled into its phase's share.
 */
function progressWriter(deps: MediaJobDeps, job: Claimed["job"]) {
  let written: number | null = null;
  const { from, to } = PHASE_SHARE[job.phase];
  return {
    everyMs: deps.progressEveryMs,
    async report(figure: number) {
      const percent = Math.round(from + ((to - from) * figure) / 100);
      if (percent === written) return;
      written = percent;
      await writeProgress(deps.db, job, percent, deps.now());
    },
  };
}

async function attempt(deps: MediaJobDeps, job: Claimed["job"], upload: Claimed["upload"]): Promise<AttemptOutcome> {
  const written: string[] = [];
  try {
    if (upload?.objectKey === job.sourceKey) {
      if (job.phase === "ladder") return await ladderPhase(deps, job, upload, written);
      const file = await processFile(deps, upload, written, progressWriter(deps, job));
      const before = await swapUploadFile(deps, job, file, deps.now(), deps.now() + FIRST_RUN_GRACE_MS);
      if (before) {
        // The new files are the upload's now: nothing below may remove them.
        written.length = 0;
        // Left behind if every try fails: records of them go stale within RECORD_TTL_MS and the
        // cron job's sweep removes files nothing points at. The job is done either way.
        await deletePreviousFiles(deps.bucket, before, file).catch((error) =>
          console.error(JSON.stringify({ job: job.id, removePrevious: String(error) })),
        );
        // A video's job moved on to its ladder in the swap's batch.
        if (upload.type === "video") return { outcome: "next" };
      } else {
        await deps.bucket.delete(written);
      }
    }
    // Done, or obsolete: the upload is gone, expired or now points at another file.
    await finishMediaJob(deps.db, job, deps.now());
    return { outcome: "done" };
  } catch (error) {
    // Every key an attempt writes is its own (a ladder's too: its id), never another attempt's.
    if (written.length) await deps.bucket.delete(written).catch(() => {});
    return failed(deps, job, job.phase === "ladder" ? "ladder" : (upload?.type ?? "video"), error);
  }
}

/**
 * The ladder phase: charged to the account's day (or waiting for the next, its attempt given
 * back, or never made when the video is longer than a whole day's limit), then made and stored.
 */
async function ladderPhase(
  deps: MediaJobDeps,
  job: Claimed["job"],
  upload: NonNullable<Claimed["upload"]>,
  written: string[],
): Promise<AttemptOutcome> {
  const charge = await chargeLadder(deps, job, upload);
  if (charge === "never") {
    const words = ladderRefusal(deps.videoSecondsPerDay);
    await failForGood(deps, job, `daily limit: ${words}`, words, deps.now());
    return { outcome: "failed" };
  }
  if (charge === "tomorrow") {
    const nextAttemptAt = nextUtcDayAt(deps.now()) + spread(BUSY_RETRY_MS);
    const error = "the account's video minutes for the day are spent";
    const outcome = { status: "pending", error, nextAttemptAt, attemptGivenBack: true } as const;
    await retryLater(deps.db, job, outcome, deps.now(), dailyLimitWords(deps.videoSecondsPerDay));
    return { outcome: "retry", retryInMs: nextAttemptAt - deps.now() };
  }
  // A ladder the upload was not given (its file changed, or another attempt took the job over)
  // is no one's: its keys are this attempt's own.
  if ((await makeLadder(deps, job, upload, written, progressWriter(deps, job))) !== "stored")
    await deps.bucket.delete(written);
  return { outcome: "done" };
}

/** A failed attempt's outcome: waiting its turn (busy), a retry later, or failed for good. */
async function failed(
  deps: MediaJobDeps,
  job: Claimed["job"],
  type: MediaType | "ladder",
  error: unknown,
): Promise<AttemptOutcome> {
  if (error instanceof MediaServiceError && error.busy) {
    // The service (or every container) is busy: the job waits its turn, its attempt given back.
    const retryInMs = spread(BUSY_RETRY_MS);
    const nextAttemptAt = deps.now() + retryInMs;
    const outcome = { status: "pending", error: failure(error), nextAttemptAt, attemptGivenBack: true } as const;
    await retryLater(deps.db, job, outcome, deps.now());
    return { outcome: "retry", retryInMs };
  }
  const permanent = error instanceof MediaServiceError && error.permanent;
  const exhausted = job.attempts >= MAX_ATTEMPTS;
  const message = failure(error);
  console.error(JSON.stringify({ job: job.id, upload: job.uploadId, attempt: job.attempts, error: message }));
  if (permanent || exhausted) {
    await failForGood(deps, job, message, failureWords(type, error, job.attempts), deps.now());
    return { outcome: "failed" };
  }
  const platform = error instanceof MediaServiceError && error.platform;
  const retryInMs = spread(
    backoff(platform ? Math.min(PLATFORM_RETRY_MS, deps.retryBaseMs) : deps.retryBaseMs, job.attempts),
  );
  const nextAttemptAt = deps.now() + retryInMs;
  await retryLater(deps.db, job, { status: "pending", error: message, nextAttemptAt }, deps.now());
  return { outcome: "retry", retryInMs };
}
