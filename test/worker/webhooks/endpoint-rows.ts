import { env } from "cloudflare:workers";
import { webhookDeliveries, webhookEndpoints, webhookEvents } from "../../../src/model/webhook-schema";
import { database } from "../../../src/storage/db";
import type { DeliveryKey } from "../../../src/storage/webhook-outbox";
import { newSecret } from "../../../src/webhooks/signing";
import { ORIGIN } from "../helpers";

const db = database(env.DB);

/** The receiver's URL for `name` and a behaviour (test/support/webhook-receiver.ts). */
export const hookUrl = (name: string, behaviour = "ok") => `${env.WEBHOOK_RECEIVER_URL}/hook/${name}/${behaviour}`;

/** What the receiver recorded for `name`. */
export async function received(name: string): Promise<{ headers: Record<string, string>; body: string }[]> {
  return (await fetch(`${env.WEBHOOK_RECEIVER_URL}/received/${name}`)).json();
}

/** Each request `name` received, verified with `secret` by standardwebhooks and by svix. */
export async function verified(name: string, secret: string): Promise<{ standardwebhooks: boolean; svix: boolean }[]> {
  const response = await fetch(`${env.WEBHOOK_RECEIVER_URL}/verify/${name}`, {
    method: "POST",
    body: JSON.stringify({ secret }),
  });
  return response.json();
}

/** An endpoint row of `accountId`, written directly (the routes have tests of their own). */
export async function insertEndpoint(
  accountId: string,
  url: string,
  fields: Partial<typeof webhookEndpoints.$inferInsert> = {},
) {
  const now = Date.now();
  const row = {
    id: `ep${crypto.randomUUID().replaceAll("-", "").slice(0, 14)}`,
    accountId,
    url,
    secret: newSecret(),
    origin: ORIGIN,
    createdAt: now,
    updatedAt: now,
    ...fields,
  };
  await db.insert(webhookEndpoints).values(row);
  return row;
}

/**
 * A webhook.test event and its delivery to `endpointId`, due at `at`, written without a message to
 * the queue: a test then sends it itself, on its own clock.
 */
export async function insertDelivery(accountId: string, endpointId: string, at: number): Promise<DeliveryKey> {
  const eventId = `msg_t${crypto.randomUUID().replaceAll("-", "")}`;
  await db.batch([
    db.insert(webhookEvents).values({
      id: eventId,
      accountId,
      type: "webhook.test",
      subject: JSON.stringify({ endpoint_id: endpointId }),
      createdAt: at,
    }),
    db.insert(webhookDeliveries).values({ eventId, endpointId, nextAttemptAt: at, createdAt: at, updatedAt: at }),
  ]);
  return { eventId, endpointId };
}

/** Waits until `check` holds, polling; fails after `ms`. */
export async function until<T>(what: string, check: () => Promise<T | undefined | false>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
