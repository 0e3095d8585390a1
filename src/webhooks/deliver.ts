import type { WebhookDeliveryRow, WebhookEndpointRow, WebhookEventRow } from "../model/webhook-schema";
import { hostRefusal } from "../net/public-host";
import type { Resolver } from "../net/resolve";
import type { Database } from "../storage/db";
import { claimDelivery, endDelivery, recordAttempt, type AttemptOutcome } from "../storage/webhook-deliveries";
import type { DeliveryKey } from "../storage/webhook-outbox";
import { spread } from "../uploads/media-jobs/jobs";
import { eventPayload } from "./payload";
import {
  ANSWER_KEPT_BYTES,
  ATTEMPT_LEASE_MS,
  ATTEMPTS_KEPT,
  BUSY_RETRY_S,
  DISABLE_AFTER_MS,
  IN_FLIGHT_PER_ENDPOINT,
  retryDelayS,
} from "./schedule";
import { signature } from "./signing";

/** What sending a delivery needs: its stores, the address rule's resolver, and fetch. */
export interface DeliveryDeps {
  db: Database;
  now: () => number;
  resolve: Resolver;
  fetch: typeof fetch;
  /** Unsafe: lets endpoints on loopback addresses be reached (local test receivers). */
  allowLoopback: boolean;
  /** The configured public origin, which payload links use; empty: the endpoint's own. */
  publicOrigin: string;
  /** An attempt's time limit (ATTEMPT_TIMEOUT_MS; shorter in tests of receivers that never answer). */
  attemptTimeoutMs: number;
}

/** What the queue does with a delivery's message: drop it, or bring it back after a delay. */
export type DeliveryOutcome = { ack: true } | { retryInS: number };

const ACK = { ack: true } as const;
/** A message that comes back this close to its delivery's due time waits for it rather than being dropped. */
const EARLY_WINDOW_MS = 60_000;
/**
 * The share of attempts that prune the endpoint's older records (reading up to ATTEMPTS_KEPT of
 * them): an endpoint keeps about ATTEMPTS_KEPT and a few dozen more, and the listing shows the last
 * ATTEMPTS_KEPT, for a sixteenth of the reads.
 */
const PRUNE_SHARE = 1 / 16;
/** Returns of a message waiting for a place, at most (the queue's max_retries is 100). */
const BUSY_TRIES_MAX = 50;
/** The longest a message waits for a place at a busy endpoint. */
const BUSY_RETRY_MAX_S = 300;

/**
 * One attempt of a delivery, if it is due and the endpoint has a place: claimed under a lease,
 * sent signed within its time limit to a public address, its outcome recorded (the attempt's record,
 * the delivery's next attempt by the schedule, the endpoint's health). `tries` is how many times
 * the queue has brought this message, which spaces out its waits at a busy endpoint.
 */
export async function deliver(deps: DeliveryDeps, key: DeliveryKey, tries = 1): Promise<DeliveryOutcome> {
  const now = deps.now();
  const found = await claimDelivery(deps.db, key, now, { leaseMs: ATTEMPT_LEASE_MS, inFlight: IN_FLIGHT_PER_ENDPOINT });
  const { claimed, delivery, event, endpoint } = found;
  if (!claimed) return unclaimed(delivery, now, tries);
  if (!event || !endpoint || endpoint.disabledAt !== null) {
    await endDelivery(deps.db, key, "failed", now);
    return ACK;
  }
  const outcome = await attempt(deps, { delivery: claimed, event, endpoint });
  await recordAttempt(deps.db, claimed, outcome, deps.now(), {
    keep: ATTEMPTS_KEPT,
    prune: Math.random() < PRUNE_SHARE,
    disableAfterMs: DISABLE_AFTER_MS,
  });
  return outcome.status === "pending" && outcome.nextAttemptAt !== null
    ? { retryInS: Math.max(0, Math.ceil((outcome.nextAttemptAt - deps.now()) / 1000)) }
    : ACK;
}

/**
 * Why a message found nothing to send: the delivery is over or gone, another consumer holds it, its
 * attempt is not due (a second message for it: the delivery's own comes when due, and the relay
 * replaces a lost one), or the endpoint's places are all taken (it waits, longer each time).
 */
function unclaimed(delivery: WebhookDeliveryRow | null, now: number, tries: number): DeliveryOutcome {
  if (delivery?.status !== "pending") return ACK;
  if (delivery.leaseUntil !== null && delivery.leaseUntil >= now) return ACK;
  if (delivery.nextAttemptAt > now)
    return delivery.nextAttemptAt - now <= EARLY_WINDOW_MS
      ? { retryInS: Math.ceil((delivery.nextAttemptAt - now) / 1000) }
      : ACK;
  // A message that has waited its turn this often is dropped before the queue's retry limit
  // would send it to the dead letters: the relay sends the delivery again once the endpoint is idle.
  if (tries >= BUSY_TRIES_MAX) return ACK;
  return { retryInS: Math.max(1, spread(Math.min(BUSY_RETRY_MAX_S, BUSY_RETRY_S * 2 ** (tries - 1)))) };
}

interface Sending {
  delivery: WebhookDeliveryRow;
  event: WebhookEventRow;
  endpoint: WebhookEndpointRow;
}

/** Sends the attempt and says what came of it, by the schedule. Never throws for the receiver's doing. */
async function attempt(deps: DeliveryDeps, sending: Sending): Promise<AttemptOutcome> {
  const { delivery, event, endpoint } = sending;
  const started = deps.now();
  const answer = await send(deps, sending);
  const succeeded = answer.status !== null && answer.status >= 200 && answer.status < 300;
  const delayS = succeeded ? null : retryDelayS(delivery.attempts);
  const nextAttemptAt = delayS === null ? null : started + delayS * 1000;
  return {
    succeeded,
    status: succeeded ? "delivered" : delayS === null ? "failed" : "pending",
    nextAttemptAt,
    record: {
      endpointId: endpoint.id,
      eventId: event.id,
      type: event.type,
      attempt: delivery.attempts,
      statusCode: answer.status,
      error: answer.error,
      durationMs: Math.max(0, deps.now() - started),
      nextRetryAt: nextAttemptAt,
      response: answer.text,
      createdAt: started,
    },
  };
}

interface Answer {
  status: number | null;
  error: string | null;
  text: string | null;
}

/**
 * The POST itself: to a public address only (checked on every attempt, as a name may move), signed
 * (Standard Webhooks' headers), redirects not followed, the whole attempt, the first KiB of the
 * answer included, within the attempt's time limit. A receiver that never answers, or answers without
 * end, costs this one bounded attempt.
 */
async function send(deps: DeliveryDeps, { event, endpoint }: Sending): Promise<Answer> {
  const url = new URL(endpoint.url);
  const refusal = await hostRefusal(deps.resolve, url, deps.allowLoopback).catch((e: unknown) => String(e));
  if (refusal) return { status: null, error: refusal, text: null };
  const body = await eventPayload(event, deps.publicOrigin || endpoint.origin);
  const now = deps.now();
  const timestamp = new Date(now);
  const signal = AbortSignal.timeout(deps.attemptTimeoutMs);
  let response: Response;
  try {
    response = await deps.fetch(url, {
      method: "POST",
      body,
      redirect: "manual",
      signal,
      headers: {
        "Content-Type": "application/json",
        "User-Agent": "media-host-webhooks/1",
        "webhook-id": event.id,
        "webhook-timestamp": String(Math.floor(now / 1000)),
        "webhook-signature": signature(endpoint, { id: event.id, timestamp, body }, now),
      },
    });
  } catch (error) {
    const timedOut = signal.aborted;
    return {
      status: null,
      error: timedOut
        ? `no answer within ${deps.attemptTimeoutMs / 1000} s`
        : `the connection failed (${String(error)})`,
      text: null,
    };
  }
  const text = await firstBytes(response, ANSWER_KEPT_BYTES);
  const redirect = response.status >= 300 && response.status < 400;
  return {
    status: response.status,
    error: redirect ? `redirects are not followed (to ${response.headers.get("Location") ?? "nowhere"})` : null,
    text,
  };
}

/** The first `limit` bytes of an answer as text, as far as they came in time; the rest is never read. */
async function firstBytes(response: Response, limit: number): Promise<string | null> {
  if (!response.body) return null;
  const reader = response.body.getReader();
  const kept = new Uint8Array(limit);
  let filled = 0;
  try {
    while (filled < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      const take = Math.min(value.length, limit - filled);
      kept.set(value.subarray(0, take), filled);
      filled += take;
    }
  } catch {
    // Cut by the attempt's time limit: what came is kept.
  } finally {
    reader.cancel().catch(() => {});
  }
  return new TextDecoder().decode(kept.subarray(0, filled));
}
