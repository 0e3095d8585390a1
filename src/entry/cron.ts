import { mediaJobDeps, storesOf } from "../deps";
import type { Env } from "../env";
import { sweepPieceSessions } from "../uploads/intake/piece-sessions";
import { sweepExpiredUploads } from "../uploads/cleanup/expired-uploads";
import { sweepOrphanFiles } from "../uploads/cleanup/orphan-files";
import { sweepUsageCounters } from "../uploads/cleanup/usage-counters";
import { redriveMediaJobs } from "../uploads/media-jobs/jobs";

/**
 * The orphan sweep lists up to 5,000 objects (R2 list calls, D1 reads) and only ever finds what a
 * crash left behind an hour ago or more: it runs on every fifth run, not every minute.
 */
export const ORPHAN_SWEEP_EVERY_MINUTES = 5;

/** Whether the run scheduled at `scheduledTime` (ms) sweeps orphaned files too. */
export const sweepsOrphans = (scheduledTime: number) =>
  Math.floor(scheduledTime / 60_000) % ORPHAN_SWEEP_EVERY_MINUTES === 0;

/**
 * Every minute: re-drive media jobs that failed, crashed or never ran, remove the files of
 * expired uploads, discard piece sessions left unfinished for 2 hours, reconcile the usage counters
 * of 90 accounts, and (every fifth run) remove files nothing points at after a grace period. One
 * failing does not stop the others.
 */
export async function scheduled(env: Env, now: () => number = Date.now, { orphans = true } = {}): Promise<void> {
  const stores = storesOf(env, undefined, now);
  const results = await Promise.allSettled([
    sweepExpiredUploads(stores),
    orphans ? sweepOrphanFiles(stores) : Promise.resolve(0),
    sweepPieceSessions(stores),
    sweepUsageCounters(stores),
    redriveMediaJobs(mediaJobDeps(env, stores.db, now)),
  ]);
  const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed.length)
    throw new AggregateError(
      failed.map((r) => r.reason),
      "scheduled work failed",
    );
}
