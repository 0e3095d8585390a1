import { randomBase62 } from "../../crypto";
import { MediaServiceError } from "../../media/service";
import { MEDIA_CALL_TIMEOUT_MS } from "../../media/timeouts";
import {
  claimMediaJobWithUpload,
  deleteMediaJob,
  dueMediaJobs,
  finishMediaJob,
  unclaimedMediaJob,
  renewMediaJobLease,
  type NewMediaJob,
} from "../../storage/media-jobs";
import { deletePreviousFiles } from "../../storage/objects";
import {
  failExhaustedMediaJobs,
  failForGood,
  retryLater,
  swapUploadFile,
  writeProgress,
} from "../../storage/upload-processing";
import type { Stores } from "../../storage/stores";
import type { MediaType } from "../../model/schema";
import { exhaustedWords, failure, failureWords } from "./failure";
import { processFile, type MediaDeps } from "./processing";
import type { MediaJobRunner, RunnerState } from "./runner";

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
/** Runners the cron job starts in one run, at most: the rest wait for its next run. */
const REDRIVE_BATCH = 50;
/** A job's first run is the one started right after the upload; the cron job waits this long before stepping in. */
export const FIRST_RUN_GRACE_MS = 2 * 60_000;

/**
 * How often a running conversion's progress is asked for and, when its whole percent changed,
 * written to its upload: a job's progress costs at most one D1 write per interval (and at most
 * 100 in all), however long it runs.
 */
export const PROGRESS_EVERY_MS = 5000;

export interface MediaJobDeps extends MediaDeps {
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
 * its lease has not run out), "none" (nothing to do: finished, or out of attempts).
 */
type AttemptOutcome = { outcome: "done" | "failed" | "held" | "none" } | { outcome: "retry"; retryInMs: number };

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

/** Writes a running job's figures to its upload, each only when its whole percent changed. */
function progressWriter(deps: MediaJobDeps, job: Claimed["job"]) {
  let written: number | null = null;
  return {
    everyMs: deps.progressEveryMs,
    async report(percent: number) {
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
      const file = await processFile(deps, upload, written, progressWriter(deps, job));
      const before = await swapUploadFile(deps, job, file, deps.now());
      if (before) {
        // The new files are the upload's now: nothing below may remove them.
        written.length = 0;
        // Left behind if every try fails: records of them go stale within RECORD_TTL_MS and the
        // cron job's sweep removes files nothing points at. The job is done either way.
        await deletePreviousFiles(deps.bucket, before, file).catch((error) =>
          console.error(JSON.stringify({ job: job.id, removePrevious: String(error) })),
        );
      } else {
        await deps.bucket.delete(written);
      }
    }
    // Done, or obsolete: the upload is gone, expired or now points at another file.
    await finishMediaJob(deps.db, job, deps.now());
    return { outcome: "done" };
  } catch (error) {
    if (written.length) await deps.bucket.delete(written).catch(() => {});
    return failed(deps, job, upload?.type ?? "video", error);
  }
}

/** A failed attempt's outcome: waiting its turn (busy), a retry later, or failed for good. */
async function failed(
  deps: MediaJobDeps,
  job: Claimed["job"],
  type: MediaType,
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

/**
 * A runner alive (by the platform's word) whose job has been due this long without being
 * claimed is taken as lost and run again from the top: a sleeping runner claims its job within
 * seconds of waking. It happens where an engine stops and forgets its sleepers (the local one,
 * restarted, keeps no alarms). Running a live one again by mistake (one whose step waits to
 * retry) costs an attempt's start, never a second runner or an early attempt.
 */
export const RUNNER_LOST_MS = 60_000;

/**
 * The cron job's part: a runner for each job whose run failed, crashed or never started
 * (pending and due, or running with a lease that ran out). A job has one runner, whose id is the
 * job's: one that does not exist is created (in batches), one that ended is run again, and one
 * still alive is left to it (it sleeps until the job is due, or is about to take it over), unless
 * the job has waited past RUNNER_LOST_MS. Starting one is quick; the work is the runner's, so a
 * cron run stays short however long the jobs are.
 */
export async function redriveMediaJobs(deps: MediaJobDeps, limit = REDRIVE_BATCH): Promise<number> {
  const now = deps.now();
  await failExhaustedMediaJobs(deps, now, MAX_ATTEMPTS, {
    video: exhaustedWords("video", MAX_ATTEMPTS),
    image: exhaustedWords("image", MAX_ATTEMPTS),
  });
  const due = await dueMediaJobs(deps.db, now, MAX_ATTEMPTS, limit);
  const states = await Promise.allSettled(due.map((job) => deps.runner.state(job.id)));
  const create: string[] = [];
  const restarts: Promise<void>[] = [];
  due.forEach((job, i) => {
    const state =
      states[i]!.status === "fulfilled" ? (states[i] as PromiseFulfilledResult<RunnerState>).value : "unknown";
    if (state === "none") create.push(job.id);
    // A queued runner waits its turn, and one the platform did not tell of is asked again next run.
    else if (state === "ended" || (state === "alive" && now - job.dueAt > RUNNER_LOST_MS))
      restarts.push(deps.runner.restart(job.id));
  });
  const started = await Promise.allSettled([deps.runner.startMany(create), ...restarts]);
  const failed = started.filter((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed.length)
    throw new AggregateError(
      failed.map((f) => f.reason),
      `${failed.length} starts of the runners of ${due.length} due media jobs failed`,
    );
  return create.length + restarts.length;
}
