import { processDeps } from "./bindings";
import type { Env } from "./env";
import { sweepPieceSessions } from "./uploads/intake/piece-sessions";
import { sweepExpiredUploads } from "./uploads/cleanup/expired-uploads";
import { sweepOrphanFiles } from "./uploads/cleanup/orphan-files";
import { redriveMediaJobs } from "./uploads/media-jobs/jobs";

/**
 * Every few minutes: remove the files of expired uploads and files nothing points at (after a
 * grace period), discard piece sessions left unfinished
 * for 2 hours, and re-drive media jobs that failed, crashed or never ran. One failing does not
 * stop the others.
 */
export async function scheduled(env: Env, now: () => number = Date.now): Promise<void> {
  const deps = processDeps(env, undefined, now);
  const results = await Promise.allSettled([sweepExpiredUploads(deps), sweepOrphanFiles(deps), sweepPieceSessions(deps), redriveMediaJobs(deps)]);
  const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed.length) throw new AggregateError(failed.map((r) => r.reason), "scheduled work failed");
}
