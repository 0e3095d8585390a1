import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { processDeps } from "../../bindings";
import type { Env } from "../../env";
import { JOB_TIME_LIMIT_MS, LEASE_MS, runMediaJob } from "./jobs";
import type { MediaJobParams } from "./runner";

/**
 * One runner of a media job. Its single step runs the job's attempt (runMediaJob), which records
 * its own outcome in D1 and renews its lease while it works. The step is retried only when the job
 * is held by another runner whose lease may yet run out (this one then takes it over), or when
 * the attempt itself could not run (D1 unreachable); a failed conversion is the job row's to
 * retry, through the cron job.
 */
export class MediaJobWorkflow extends WorkflowEntrypoint<Env, MediaJobParams> {
  override async run(event: Readonly<WorkflowEvent<MediaJobParams>>, step: WorkflowStep) {
    return step.do(
      "attempt",
      { retries: { limit: 3, delay: LEASE_MS, backoff: "linear" }, timeout: JOB_TIME_LIMIT_MS },
      async () => {
        const outcome = await runMediaJob(processDeps(this.env), event.payload.jobId);
        if (outcome === "held") throw new Error(`media job ${event.payload.jobId} is held by another runner`);
        return outcome;
      },
    );
  }
}
