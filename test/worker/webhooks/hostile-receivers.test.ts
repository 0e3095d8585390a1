import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { webhookDeliveryDeps } from "../../../src/deps";
import { consumeDeliveries } from "../../../src/entry/webhook-queue";
import { storesOf } from "../../../src/deps";
import type { DeliveryKey } from "../../../src/storage/webhook-outbox";
import { deliver } from "../../../src/webhooks/deliver";
import { relayWebhooks } from "../../../src/webhooks/relay";
import { IN_FLIGHT_PER_ENDPOINT, PENDING_PER_ENDPOINT } from "../../../src/webhooks/schedule";
import { newAccount } from "../helpers";
import { hookUrl, insertDelivery, insertEndpoint, received } from "./endpoint-rows";

/**
 * The consumer's deps with a time limit of 1.5 s instead of 10, so that the receivers that never
 * answer cost the tests little: what is tested is that the limit holds, whatever it is.
 */
const ATTEMPT_TIMEOUT_MS = 1500;
const deliveryDeps = () => ({ ...webhookDeliveryDeps(env), attemptTimeoutMs: ATTEMPT_TIMEOUT_MS });

const lastAttempt = (endpointId: string) =>
  env.DB.prepare(
    "SELECT status_code AS status, error, response, duration_ms AS ms FROM webhook_attempts WHERE endpoint_id = ? ORDER BY id DESC",
  )
    .bind(endpointId)
    .first<{ status: number | null; error: string | null; response: string | null; ms: number }>();

/** One attempt of a fresh delivery to `url`, as the consumer makes it. */
async function attemptTo(url: string) {
  const account = await newAccount("hostile");
  const endpoint = await insertEndpoint(account.id, url);
  const outcome = await deliver(deliveryDeps(), await insertDelivery(account.id, endpoint.id, Date.now()));
  return { outcome, attempt: await lastAttempt(endpoint.id), endpoint, account };
}

/** A delivery that works, after each hostile case: nothing the receiver did harmed the Worker. */
async function stillDelivers() {
  const name = `after-${crypto.randomUUID()}`;
  const { attempt } = await attemptTo(hookUrl(name));
  expect(attempt!.status).toBe(200);
  expect(await received(name)).toHaveLength(1);
}

describe("hostile webhook receivers", () => {
  it("an endpoint on a private address, or a name resolving to one, is never sent anything", async () => {
    for (const url of ["http://10.0.0.1/hook", "http://169.254.169.254/latest", "http://private.test/hook"]) {
      const { outcome, attempt } = await attemptTo(url);
      expect(outcome).toEqual({ retryInS: 5 });
      expect(attempt).toMatchObject({ status: null, error: expect.stringMatching(/^address not allowed/) });
    }
    await stillDelivers();
  });

  it("a redirect is not followed, whatever its target", async () => {
    const name = `redirect-${crypto.randomUUID()}`;
    const { attempt } = await attemptTo(hookUrl(name, "redirect"));
    expect(attempt).toMatchObject({ status: 302, error: "redirects are not followed (to http://10.0.0.1/hook)" });
    expect(await received(name)).toHaveLength(1);
    await stillDelivers();
  });

  it("a receiver that never answers, or answers without end, or 10 MB, costs one bounded attempt", async () => {
    const [hang, forever, huge] = await Promise.all(
      ["hang", "forever", "huge"].map((behaviour) =>
        attemptTo(hookUrl(`${behaviour}-${crypto.randomUUID()}`, behaviour)),
      ),
    );
    expect(hang!.attempt).toMatchObject({ status: null, error: "no answer within 1.5 s" });
    expect(hang!.attempt!.ms).toBeLessThan(ATTEMPT_TIMEOUT_MS + 1000);
    expect(forever!.attempt!.status).toBe(200);
    expect(forever!.attempt!.ms).toBeLessThan(ATTEMPT_TIMEOUT_MS + 1000);
    expect(huge!.attempt).toMatchObject({ status: 200, response: "a".repeat(1024) });
    await stillDelivers();
  }, 30_000);

  it(`at most ${IN_FLIGHT_PER_ENDPOINT} attempts to one endpoint are in flight; the others wait without spending one`, async () => {
    const account = await newAccount("hostile-busy");
    const endpoint = await insertEndpoint(account.id, hookUrl(`busy-${crypto.randomUUID()}`, "hang"));
    const other = await insertEndpoint(account.id, hookUrl(`calm-${crypto.randomUUID()}`));
    const keys = await Promise.all(
      Array.from({ length: IN_FLIGHT_PER_ENDPOINT + 2 }, () => insertDelivery(account.id, endpoint.id, Date.now())),
    );
    const deps = deliveryDeps();
    const sending = keys.slice(0, IN_FLIGHT_PER_ENDPOINT).map((key) => deliver(deps, key));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const waiting = await deliver(deps, keys.at(-1)!);
    expect(waiting).toEqual({ retryInS: expect.any(Number) });
    // Another endpoint of the same account is not held up.
    expect(await deliver(deps, await insertDelivery(account.id, other.id, Date.now()))).toEqual({ ack: true });
    await Promise.all(sending);
    const counts = await env.DB.prepare("SELECT attempts FROM webhook_deliveries WHERE event_id = ?")
      .bind(keys.at(-1)!.eventId)
      .first<{ attempts: number }>();
    expect(counts!.attempts).toBe(0);
  }, 30_000);

  it("the relay sends again a delivery whose message was lost, and an endpoint's backlog is bounded", async () => {
    const account = await newAccount("hostile-backlog");
    const endpoint = await insertEndpoint(account.id, hookUrl(`backlog-${crypto.randomUUID()}`, "statuses/500"), {
      failingSince: Date.now() - 3600_000,
    });
    const old = Date.now() - 3600_000;
    // PENDING_PER_ENDPOINT + 3 pending deliveries, the first three the oldest.
    await env.DB.prepare(
      `INSERT INTO webhook_events (id, account_id, type, subject, created_at)
       WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       SELECT ? || printf('%05d', i), ?, 'webhook.test', '{}', ? + i FROM n`,
    )
      .bind(PENDING_PER_ENDPOINT + 3, `msg_backlog_${endpoint.id}_`, account.id, old)
      .run();
    await env.DB.prepare(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, next_attempt_at, created_at, updated_at)
       SELECT id, ?, created_at, created_at, created_at FROM webhook_events WHERE id LIKE ?`,
    )
      .bind(endpoint.id, `msg_backlog_${endpoint.id}_%`)
      .run();
    const sent: DeliveryKey[] = [];
    const deliveries = {
      sendBatch: async (m: Iterable<{ body: DeliveryKey }>) => sent.push(...[...m].map((x) => x.body)),
    };
    await relayWebhooks({ ...storesOf(env), deliveries }, 50);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.length).toBeLessThanOrEqual(50);
    const states = await env.DB.prepare(
      "SELECT status, count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ? GROUP BY status ORDER BY status",
    )
      .bind(endpoint.id)
      .all<{ status: string; n: number }>();
    expect(states.results).toEqual([
      { status: "dropped", n: 3 },
      { status: "pending", n: PENDING_PER_ENDPOINT },
    ]);
    const dropped = await env.DB.prepare("SELECT dropped_events AS n FROM webhook_endpoints WHERE id = ?")
      .bind(endpoint.id)
      .first<{ n: number }>();
    expect(dropped!.n).toBe(3);
  });

  it("the consumer drops a message it cannot read, and the dead letters end their deliveries once a day old", async () => {
    const account = await newAccount("hostile-dead");
    const endpoint = await insertEndpoint(account.id, hookUrl(`dead-${crypto.randomUUID()}`));
    // A dead letter ends a delivery a day old; a younger one is left pending, for the relay.
    const key = await insertDelivery(account.id, endpoint.id, Date.now() - 25 * 3600_000);
    const young = await insertDelivery(account.id, endpoint.id, Date.now());
    const unreadable = createMessageBatch("media-host-webhooks", [
      { id: "m1", timestamp: new Date(), attempts: 1, body: { nonsense: true } },
    ]);
    const ctx = createExecutionContext();
    await consumeDeliveries(unreadable, env);
    expect((await getQueueResult(unreadable, ctx)).explicitAcks).toEqual(["m1"]);
    const dead = createMessageBatch("media-host-webhooks-dead", [
      { id: "m2", timestamp: new Date(), attempts: 1, body: key },
      { id: "m3", timestamp: new Date(), attempts: 1, body: young },
    ]);
    await consumeDeliveries(dead, env);
    const statusOf = async (k: DeliveryKey) =>
      (await env.DB.prepare("SELECT status FROM webhook_deliveries WHERE event_id = ?")
        .bind(k.eventId)
        .first<{ status: string }>())!.status;
    expect(await statusOf(key)).toBe("failed");
    expect(await statusOf(young)).toBe("pending");
  });

  it("an event forgotten after 3 days takes its pending deliveries with it, counted as dropped", async () => {
    const account = await newAccount("hostile-forgotten");
    const endpoint = await insertEndpoint(account.id, hookUrl(`forgotten-${crypto.randomUUID()}`));
    const old = await insertDelivery(account.id, endpoint.id, Date.now() - 4 * 24 * 3600_000);
    const deliveries = { sendBatch: async () => {} };
    // Runs until this file's old event is among those forgotten (other files may have older ones).
    for (let i = 0; i < 20; i++) {
      await relayWebhooks({ ...storesOf(env), deliveries }, 0);
      const left = await env.DB.prepare("SELECT count(*) AS n FROM webhook_events WHERE id = ?")
        .bind(old.eventId)
        .first<{ n: number }>();
      if (left!.n === 0) break;
    }
    const row = await env.DB.prepare("SELECT dropped_events AS n FROM webhook_endpoints WHERE id = ?")
      .bind(endpoint.id)
      .first<{ n: number }>();
    expect(row!.n).toBe(1);
    const delivery = await env.DB.prepare("SELECT count(*) AS n FROM webhook_deliveries WHERE event_id = ?")
      .bind(old.eventId)
      .first<{ n: number }>();
    expect(delivery!.n).toBe(0);
  });
});
