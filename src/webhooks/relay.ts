import type { Stores } from "../storage/stores";
import { dropOverflow, relayReads } from "../storage/webhook-deliveries";
import { announceDeliveries } from "../storage/webhook-outbox";
import { KEEP_EVENTS_MS, PENDING_PER_ENDPOINT, RELAY_AFTER_MS } from "./schedule";

/** Events forgotten in one run, at most (with their deliveries). */
const PURGE_BATCH = 500;

/**
 * The cron job's part of webhooks, within `limit` messages a run and one round trip when there is
 * nothing to do: the relay of the outbox (a
 * delivery whose message was never sent, its change committed just before the Worker stopped, or
 * was lost, is sent again once it is RELAY_AFTER_MS overdue; the claim makes a second message
 * harmless), the bound on what a failing endpoint may hold (the oldest dropped and counted), and
 * events forgotten once every schedule has ended. Answers how many were sent again.
 */
export async function relayWebhooks(deps: Stores, limit: number): Promise<number> {
  const now = deps.now();
  const { overdue, overBacklog } = await relayReads(deps.db, now, {
    graceMs: RELAY_AFTER_MS,
    limit,
    cap: PENDING_PER_ENDPOINT,
    forgetBefore: now - KEEP_EVENTS_MS,
    purgeLimit: PURGE_BATCH,
  });
  await announceDeliveries(deps.deliveries, overdue);
  await dropOverflow(deps.db, overBacklog, PENDING_PER_ENDPOINT, now);
  return overdue.length;
}
