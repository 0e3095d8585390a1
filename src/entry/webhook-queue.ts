import { z } from "zod";
import { webhookDeliveryDeps } from "../deps";
import type { Env } from "../env";
import { endDelivery } from "../storage/webhook-deliveries";
import type { DeliveryKey } from "../storage/webhook-outbox";
import { deliver } from "../webhooks/deliver";

/** A message as the outbox writes it; anything else is logged and dropped. */
const deliveryKey = z.object({ eventId: z.string().max(200), endpointId: z.string().max(200) });

/** A failure of the consumer itself (D1 unreachable): the message comes back after this. */
const CONSUMER_RETRY_S = 30;

/**
 * The delivery queue's consumer: each message is one delivery's attempt, sent beside the batch's
 * others; the message is dropped once the delivery needs nothing more, or brought back after the
 * delay its schedule (or a busy endpoint) asks for. The dead-letter queue's messages (100 failures
 * of this consumer itself) end their deliveries as failed.
 */
export async function consumeDeliveries(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const deps = webhookDeliveryDeps(env);
  const dead = batch.queue.endsWith("-dead");
  await Promise.all(
    batch.messages.map(async (message) => {
      const key = deliveryKey.safeParse(message.body);
      if (!key.success) {
        console.error(JSON.stringify({ webhookMessage: "unreadable", id: message.id }));
        return message.ack();
      }
      try {
        if (dead) {
          await endDelivery(deps.db, key.data satisfies DeliveryKey, "failed", deps.now());
          return message.ack();
        }
        const outcome = await deliver(deps, key.data, message.attempts);
        if ("retryInS" in outcome) message.retry({ delaySeconds: outcome.retryInS });
        else message.ack();
      } catch (error) {
        console.error(JSON.stringify({ webhookDelivery: key.data, error: String(error) }));
        message.retry({ delaySeconds: CONSUMER_RETRY_S });
      }
    }),
  );
}
