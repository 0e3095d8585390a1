/**
 * How long media work may take, kept together because each bound rests on the one before:
 * the media service's limit on a job (its JOB_TIMEOUT_MS, which MediaContainer sets from here),
 * the Worker's limit on a call, and through them a media job's lease (src/uploads/media-jobs/jobs.ts).
 */

/** The media service's time for one job's tools, all of them together, from when the job starts running. */
export const MEDIA_JOB_TIMEOUT_MS = 15 * 60_000;

/**
 * The Worker's limit on one call, the answer's body included: the job's time, plus its input and
 * output crossing (up to 210 MiB each way) and a wait in the service's queue. A call past it is
 * abandoned, and the service, seeing its client gone, stops the job.
 */
export const MEDIA_CALL_TIMEOUT_MS = MEDIA_JOB_TIMEOUT_MS + 5 * 60_000;
