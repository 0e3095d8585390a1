import type { WebhookAttemptRow } from "../model/webhook-schema";
import { recentAttempts } from "../storage/webhook-endpoints";
import type { Stores } from "../storage/stores";
import { isoTimestamp } from "../time";
import { getOwnedEndpoint } from "./endpoints";
import { ATTEMPTS_KEPT } from "./schedule";

/** One attempt to deliver an event, as the API answers it. */
export function presentAttempt(row: WebhookAttemptRow) {
  return {
    event_id: row.eventId,
    type: row.type,
    attempt: row.attempt,
    status_code: row.statusCode,
    error: row.error,
    duration_ms: row.durationMs,
    next_retry_at: row.nextRetryAt === null ? null : isoTimestamp(row.nextRetryAt),
    response: row.response,
    created_at: isoTimestamp(row.createdAt),
  };
}

/** The endpoint's last attempts, newest first: as many as delivery keeps. */
export async function endpointAttempts(deps: Stores, accountId: string, endpointId: string) {
  await getOwnedEndpoint(deps, accountId, endpointId);
  return recentAttempts(deps.db, endpointId, ATTEMPTS_KEPT);
}
