import { z } from "zod";
import { webhookDeliveryDeps } from "../deps";
import type { Env } from "../env";
import { endDelivery } from "../storage/webhook-deliveries";
import type { DeliveryKey } from "../storage/webhook-outbox";
import { deliver, type DeliveryDeps } from "../webhooks/deliver";
import { IN_FLIGHT_PER_ENDPOINT } from "../webhooks/schedule";

/** A message as the outbox writes it; anything else is logged and dropped. */
const deliveryKey = z.object({ eventId: z.string().max(200), endpointId: z.string().max(200) });

/** A dead letter's delivery this old ends as failed; a younger one is left to the relay. */
const DEAD_LETTER_AGE_MS = 24 * 3600_000;

/** A failure of the consumer itself (D1 unreachable): the message comes back after this. */
const CONSUMER_RETRY_S = 30;

/**
 * The delivery queue's consumer: each message is one delivery's attempt. A batch's messages for
 * one endpoint are sent at most IN_FLIGHT_PER_ENDPOINT at a time (the bound the claim holds across
 * consumers, so that a burst to one endpoint waits here rather than coming back later), and the
 * endpoints side by side. A message is dropped once its delivery needs nothing more, or brought
 * back after the delay its schedule (or a busy endpoint) asks for. The dead-letter queue takes a
 * message after 100 returns (the consumer failing, or a long wait at a busy endpoint): its delivery
 * ends as failed once a day old, and is left to the relay before that.
 */
export async function consumeDeliveries(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const deps = webhookDeliveryDeps(env);
  const dead = batch.queue.endsWith("-dead");
  const byEndpoint = new Map<string, { message: Message<unknown>; key: DeliveryKey }[]>();
  for (const message of batch.messages) {
    const key = deliveryKey.safeParse(message.body);
    if (!key.success) {
      console.error(JSON.stringify({ webhookMessage: "unreadable", id: message.id }));
      message.ack();
      continue;
    }
    const group = byEndpoint.get(key.data.endpointId) ?? [];
    group.push({ message, key: key.data });
    byEndpoint.set(key.data.endpointId, group);
  }
  const handle = (item: { message: Message<unknown>; key: DeliveryKey }) => handleMessage(deps, item, dead);
  await Promise.all(
    [...byEndpoint.values()].map(async (group) => {
      const workers = Array.from({ length: Math.min(IN_FLIGHT_PER_ENDPOINT, group.length) }, async () => {
        for (let item = group.shift(); item; item = group.shift()) await handle(item);
      });
      await Promise.all(workers);
    }),
  );
}

async function handleMessage(
  deps: DeliveryDeps,
  { message, key }: { message: Message<unknown>; key: DeliveryKey },
  dead: boolean,
) {
  try {
    if (dead) {
      // A day old, it has had its chances; younger, the relay sends it again (a message can
      // reach this queue by waiting its turn at a busy endpoint as well as by failing).
      await endDelivery(deps.db, key, "failed", deps.now(), deps.now() - DEAD_LETTER_AGE_MS);
      return message.ack();
    }
    const outcome = await deliver(deps, key, message.attempts);
    if ("retryInS" in outcome) message.retry({ delaySeconds: outcome.retryInS });
    else message.ack();
  } catch (error) {
    console.error(JSON.stringify({ webhookDelivery: key, error: String(error) }));
    message.retry({ delaySeconds: CONSUMER_RETRY_S });
  }
}
