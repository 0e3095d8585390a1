import type { Stores } from "../storage/stores";
import { dropOverflow, overdueDeliveries, purgeEvents } from "../storage/webhook-deliveries";
import { announceDeliveries } from "../storage/webhook-outbox";
import { KEEP_EVENTS_MS, PENDING_PER_ENDPOINT, RELAY_AFTER_MS } from "./schedule";

/** Events forgotten in one run, at most (with their deliveries). */
const PURGE_BATCH = 500;

/**
 * The cron job's part of webhooks, within `limit` messages a run: the relay of the outbox (a
 * delivery whose message was never sent, its change committed just before the Worker stopped, or
 * was lost, is sent again once it is RELAY_AFTER_MS overdue; the claim makes a second message
 * harmless), the bound on what a failing endpoint may hold (the oldest dropped and counted), and
 * events forgotten once every schedule has ended. Answers how many were sent again.
 */
export async function relayWebhooks(deps: Stores, limit: number): Promise<number> {
  const now = deps.now();
  const overdue = await overdueDeliveries(deps.db, now, RELAY_AFTER_MS, limit);
  await announceDeliveries(deps.deliveries, overdue);
  await dropOverflow(deps.db, PENDING_PER_ENDPOINT, now);
  await purgeEvents(deps.db, now - KEEP_EVENTS_MS, PURGE_BATCH);
  return overdue.length;
}
