/**
 * How webhook deliveries are tried (docs/api.md, "Webhooks"): at least once, each attempt within
 * a time limit, again after each of these delays, then given up; an endpoint failing for days is
 * disabled. The delays stay under Queues' 12-hour limit on a message's delay (Cloudflare Queues,
 * "Limits": https://developers.cloudflare.com/queues/platform/limits/).
 */

/** Seconds before each retry: 8 attempts over about 28 hours (Standard Webhooks' suggested schedule). */
export const RETRY_DELAYS_S = [5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_S.length + 1;

/** The delay after failed attempt `attempt` (1-based), or null when it was the last. */
export const retryDelayS = (attempt: number): number | null => RETRY_DELAYS_S[attempt - 1] ?? null;

/** An attempt's time limit, headers and the part of the answer kept. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** How long a claimed attempt is held: its time limit and a margin. A consumer that dies frees it then. */
export const ATTEMPT_LEASE_MS = ATTEMPT_TIMEOUT_MS + 10_000;
/** Attempts to one endpoint in flight at once; a delivery that finds them all taken waits its turn. */
export const IN_FLIGHT_PER_ENDPOINT = 4;
/** About how long a delivery waits for a place, spread, without spending an attempt. */
export const BUSY_RETRY_S = 5;
/** An endpoint whose every attempt has failed for this long is disabled. */
export const DISABLE_AFTER_MS = 5 * 24 * 3600_000;
/** Pending deliveries an endpoint may hold; past it the oldest are dropped and counted. */
export const PENDING_PER_ENDPOINT = 1000;
/** Bytes of a receiver's answer kept in the attempt's record. */
export const ANSWER_KEPT_BYTES = 1024;
/** Attempt records kept per endpoint (GET /api/webhooks/{id}/deliveries). */
export const ATTEMPTS_KEPT = 100;
/**
 * A pending delivery whose attempt is this overdue, and unheld, has lost its message (a send that
 * failed after its change committed, a consumer that died): the relay sends it again.
 */
export const RELAY_AFTER_MS = 2 * 60_000;
/** Events are forgotten this long after they were made, with their deliveries: every schedule has ended. */
export const KEEP_EVENTS_MS = 3 * 24 * 3600_000;
