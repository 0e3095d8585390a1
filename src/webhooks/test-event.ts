import { randomBase62 } from "../crypto";
import { ApiError } from "../errors";
import { insertEndpointEvent } from "../storage/webhook-endpoints";
import { announceDeliveries } from "../storage/webhook-outbox";
import type { Stores } from "../storage/stores";
import { getOwnedEndpoint } from "./endpoints";

/** What a webhook.test event's `data` says. */
export const TEST_MESSAGE = "A test event, sent because it was asked for (POST /api/webhooks/{id}/test).";

const disabled = () =>
  new ApiError(409, "This webhook endpoint is disabled: enable it first (PATCH with enabled: true).");

/**
 * A `webhook.test` event for this endpoint alone, delivered as any event is (signed, retried on
 * the same schedule), and handed to the delivery queue. Its subject is the payload's `data` as
 * it is sent. A disabled endpoint is refused: its deliveries are not sent, and a test that is
 * accepted and then never arrives would say nothing. The event's id (the `webhook-id` header).
 */
export async function sendTestEvent(deps: Stores, accountId: string, endpointId: string): Promise<string> {
  const endpoint = await getOwnedEndpoint(deps, accountId, endpointId);
  if (endpoint.disabledAt !== null) throw disabled();
  const id = `msg_${randomBase62(24)}`;
  const subject = JSON.stringify({ endpoint_id: endpointId, message: TEST_MESSAGE });
  const key = await insertEndpointEvent(deps.db, accountId, endpointId, {
    id,
    type: "webhook.test",
    subject,
    now: deps.now(),
  });
  // Disabled, or deleted, since it was read.
  if (!key) throw disabled();
  await announceDeliveries(deps.deliveries, [key]);
  return id;
}
