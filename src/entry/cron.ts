import { mediaJobDeps, storesOf } from "../deps";
import type { Env } from "../env";
import { sweepPieceSessions } from "../uploads/intake/piece-sessions";
import { sweepExpiredUploads } from "../uploads/cleanup/expired-uploads";
import { backfillPlaceholders } from "../uploads/cleanup/placeholders";
import { sweepOrphanFiles } from "../uploads/cleanup/orphan-files";
import { sweepUsageCounters } from "../uploads/cleanup/usage-counters";
import { redriveMediaJobs } from "../uploads/media-jobs/redrive";
import { relayWebhooks } from "../webhooks/relay";
import { sweepSignIns } from "../accounts/sign-in-sweep";

/**
 * The orphan sweep lists up to 5,000 objects (R2 list calls, D1 reads) and only ever finds what a
 * crash left behind an hour ago or more: it runs on every fifth run, not every minute.
 */
export const ORPHAN_SWEEP_EVERY_MINUTES = 5;

/**
 * What one run may take on, so that it makes fewer than 1,000 subrequests and D1 queries, the
 * tightest bound Cloudflare has given an invocation on the Paid plan Containers need (Workers
 * limits, "Subrequests": https://developers.cloudflare.com/workers/platform/limits/#subrequests,
 * where each D1 round trip, R2 call, Workflow call and Queue send counts one; D1 limits). With
 * every sweep at its limit, a run makes 797 (measured in test/worker/cleanup/cron-budget.test.ts):
 * an expired upload costs 4 (its files' delete, a listing of what is left, its delete, the row with
 * its upload.expired event) and 1 more when its account has an endpoint (the event's message), a
 * piece session 6 and a stray piece prefix 3, a due media job 4 (its runner asked, then
 * restarted), the orphan sweep about 125 (5,000 objects listed 1,000 a call, their upload ids
 * looked up 90 a query), the usage sweep 2, the webhook relay 3 (its reads in one round trip,
 * 200 messages in 2 sends), the placeholder backfill 52 (its read, a thumbnail read for each,
 * their rows written in one batch) and the sign-in sweep 3 (one delete each of expired challenges,
 * sessions and links). What is left waits a minute: a backlog of 72,000 expired
 * uploads takes a day, as does one of 72,000 uploads without a placeholder.
 */
export const CRON_LIMITS = {
  expiredUploads: 50,
  pieceSessions: 30,
  mediaJobs: 30,
  webhookMessages: 200,
  placeholders: 50,
  signIns: 500,
};

/** Whether the run scheduled at `scheduledTime` (ms) sweeps orphaned files too. */
export const sweepsOrphans = (scheduledTime: number) =>
  Math.floor(scheduledTime / 60_000) % ORPHAN_SWEEP_EVERY_MINUTES === 0;

/**
 * Every minute: re-drive media jobs that failed, crashed or never ran, remove the files of
 * expired uploads, discard piece sessions left unfinished for 2 hours, reconcile the usage counters
 * of accounts not checked for a day, make the placeholders of uploads that have none yet, remove
 * expired sign-in challenges, sessions and links, and (every fifth run) remove files nothing points
 * at after a grace period, each within CRON_LIMITS.
 * One failing does not stop the others.
 */
export async function scheduled(env: Env, now: () => number = Date.now, { orphans = true } = {}): Promise<void> {
  const stores = storesOf(env, undefined, now);
  const results = await Promise.allSettled([
    sweepExpiredUploads(stores, CRON_LIMITS.expiredUploads),
    orphans ? sweepOrphanFiles(stores) : Promise.resolve(0),
    sweepPieceSessions(stores, CRON_LIMITS.pieceSessions),
    sweepUsageCounters(stores),
    redriveMediaJobs(mediaJobDeps(env, stores.db, now), CRON_LIMITS.mediaJobs),
    relayWebhooks(stores, CRON_LIMITS.webhookMessages),
    backfillPlaceholders(stores, CRON_LIMITS.placeholders),
    sweepSignIns(stores, CRON_LIMITS.signIns),
  ]);
  const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed.length)
    throw new AggregateError(
      failed.map((r) => r.reason),
      "scheduled work failed",
    );
}
