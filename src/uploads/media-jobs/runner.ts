/** What a media job's runner is given: the job row (storage/media-jobs.ts) is all it needs. */
export interface MediaJobParams {
  jobId: string;
}

/**
 * A job's runner, as the cron job finds it: none was ever made (or it is gone), one is alive
 * (queued, working or asleep until the job's next attempt), or it has ended.
 */
export type RunnerState = "none" | "alive" | "ended";

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

const ALIVE = new Set(["queued", "running", "waiting", "waitingForPause", "paused"]);

export const workflowRunner = (workflow: Workflow<MediaJobParams>): MediaJobRunner => ({
  async start(jobId) {
    await workflow.create({ id: runnerId(jobId), params: { jobId } });
  },
  async startMany(jobIds) {
    for (let i = 0; i < jobIds.length; i += BATCH)
      await workflow.createBatch(
        jobIds.slice(i, i + BATCH).map((jobId) => ({ id: runnerId(jobId), params: { jobId } })),
      );
  },
  async state(jobId) {
    let instance: WorkflowInstance;
    try {
      instance = await workflow.get(runnerId(jobId));
    } catch {
      return "none";
    }
    return ALIVE.has((await instance.status()).status) ? "alive" : "ended";
  },
  async restart(jobId) {
    await (await workflow.get(runnerId(jobId))).restart();
  },
});
