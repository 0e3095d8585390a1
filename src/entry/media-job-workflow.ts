import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { mediaJobDeps } from "../deps";
import type { Env } from "../env";
import { JOB_TIME_LIMIT_MS, LEASE_MS, MAX_ATTEMPTS, runMediaJob } from "../uploads/media-jobs/jobs";
import type { MediaJobParams } from "../uploads/media-jobs/runner";
import { JOB_PHASES } from "../model/schema";

/**
 * Rounds one runner goes through: every attempt each phase of a job has (JOB_PHASES), and as
 * many again for attempts given back (the service busy). A job still pending after them is the
 * cron job's to re-drive.
 */
const RUNNER_ROUNDS = 2 * MAX_ATTEMPTS * JOB_PHASES.length;

/**
 * One runner of a media job: the platform's entry point for the job's life, which the job row
 * (src/uploads/media-jobs/jobs.ts) decides. Each step runs one attempt of one phase (runMediaJob), which saves
 * its own outcome in D1; after a failed one the runner sleeps until the next is due. The step's
 * own retries are for an attempt that could not run (D1 unreachable) or a job another runner
 * holds. Every way a job is tried again, and by whom, is the table in docs/architecture.md,
 * "Media jobs".
 */
export class MediaJobWorkflow extends WorkflowEntrypoint<Env, MediaJobParams> {
  override async run(event: Readonly<WorkflowEvent<MediaJobParams>>, step: WorkflowStep) {
    const { jobId } = event.payload;
    for (let round = 1; ; round++) {
      const result = await step.do(
        `attempt ${round}`,
        { retries: { limit: 3, delay: LEASE_MS, backoff: "linear" }, timeout: JOB_TIME_LIMIT_MS },
        async () => {
          const attempt = await runMediaJob(mediaJobDeps(this.env), jobId);
          if (attempt.outcome === "held") throw new Error(`media job ${jobId} is held by another runner`);
          return attempt;
        },
      );
      if (round === RUNNER_ROUNDS) return result.outcome;
      // A phase done: the next (a video's ladder) is due at once, in the next round's step.
      if (result.outcome === "next") continue;
      if (result.outcome !== "retry") return result.outcome;
      // A delay from the step's cached result, under a name fixed by the round: the same sleep on
      // every re-run of run(), which the platform makes from the top after each one (a time in
      // the past would be refused on such a re-run).
      await step.sleep(`wait for attempt ${round + 1}`, result.retryInMs);
    }
  }
}
