/** What a media job's runner is given: the job row (storage/media-jobs.ts) is all it needs. */
export interface MediaJobParams {
  jobId: string;
}

/**
 * Starts a runner for a job. Deployed, each start is a MediaJobWorkflow instance, whose step has
 * no wall-clock limit; a job may have several runners over time (the cron job starts a new one
 * for a job whose runner failed or vanished), and its lease lets only one work at a time.
 */
export interface MediaJobRunner {
  start(jobId: string): Promise<void>;
}

export const workflowRunner = (workflow: Workflow<MediaJobParams>): MediaJobRunner => ({
  async start(jobId) {
    await workflow.create({ params: { jobId } });
  },
});
