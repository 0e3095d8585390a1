/** What a media job's runner is given: the job row (storage/media-jobs.ts) is all it needs. */
export interface MediaJobParams {
  jobId: string;
}

/**
 * A job's runner, as the cron job finds it: none was ever made (or it is gone), one waits its
 * turn under the Workflow's concurrency limit ("queued"), one is working or asleep until the
 * job's next attempt ("alive"), or it has ended; "unknown" when the platform did not say.
 */
export type RunnerState = "none" | "queued" | "alive" | "ended" | "unknown";

/**
 * The runner of a job. Deployed, it is a MediaJobWorkflow instance whose id is the job's
 * (`runnerId`), so a job has one runner at a time: starting one that exists fails, and the cron
 * job makes a new run of an ended one rather than a second instance.
 */
export interface MediaJobRunner {
  start(jobId: string): Promise<void>;
  /** Starts the runners of these jobs, which have none yet (at most 100 a call to the platform). */
  startMany(jobIds: string[]): Promise<void>;
  state(jobId: string): Promise<RunnerState>;
  /** Runs the job's ended (or lost) runner again from the top. */
  restart(jobId: string): Promise<void>;
}

export const runnerId = (jobId: string) => `job-${jobId}`;

/** The platform takes at most 100 instances in one createBatch. */
const BATCH = 100;

const ALIVE = new Set(["running", "waiting", "waitingForPause", "paused"]);
const notFound = (error: unknown) => /not.?found/i.test(String(error));

export const workflowRunner = (workflow: Workflow<MediaJobParams>): MediaJobRunner => ({
  async start(jobId) {
    await workflow.create({ id: runnerId(jobId), params: { jobId } });
  },
  async startMany(jobIds) {
    for (let i = 0; i < jobIds.length; i += BATCH) {
      const batch = jobIds.slice(i, i + BATCH);
      await workflow.createBatch(batch.map((jobId) => ({ id: runnerId(jobId), params: { jobId } }))).catch(async () => {
        // One refused (made meanwhile, say) must not hold back the others: each on its own.
        const each = await Promise.allSettled(
          batch.map((jobId) => workflow.create({ id: runnerId(jobId), params: { jobId } })),
        );
        const failed = each.filter((e): e is PromiseRejectedResult => e.status === "rejected");
        if (failed.some((f) => !/already.?exists/i.test(String(f.reason))))
          throw new AggregateError(
            failed.map((f) => f.reason),
            "media job runners did not start",
          );
      });
    }
  },
  async state(jobId) {
    try {
      const { status } = await (await workflow.get(runnerId(jobId))).status();
      if (status === "queued") return "queued";
      return ALIVE.has(status) ? "alive" : "ended";
    } catch (error) {
      return notFound(error) ? "none" : "unknown";
    }
  },
  async restart(jobId) {
    await (await workflow.get(runnerId(jobId))).restart();
  },
});
