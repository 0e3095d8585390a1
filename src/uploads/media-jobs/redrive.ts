import { dueMediaJobs } from "../../storage/media-jobs";
import { failExhaustedMediaJobs } from "../../storage/upload-processing";
import { exhaustedWords } from "./failure";
import { MAX_ATTEMPTS, type MediaJobDeps } from "./jobs";
import type { RunnerState } from "./runner";

/** Runners the cron job starts in one run, at most: the rest wait for its next run. */
const REDRIVE_BATCH = 50;

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
    ladder: exhaustedWords("ladder", MAX_ATTEMPTS),
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
