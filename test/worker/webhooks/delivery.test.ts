import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { webhookDeliveryDeps } from "../../../src/deps";
import { deliver } from "../../../src/webhooks/deliver";
import { DISABLE_AFTER_MS, RETRY_DELAYS_S } from "../../../src/webhooks/schedule";
import { newSecret } from "../../../src/webhooks/signing";
import { announceDeliveries } from "../../../src/storage/webhook-outbox";
import { json, newAccount, request, upload, uniquePng } from "../helpers";
import { hookUrl, insertDelivery, insertEndpoint, received, until, verified } from "./endpoint-rows";

const row = <T>(sql: string, ...values: unknown[]) =>
  env.DB.prepare(sql)
    .bind(...values)
    .first<T>();

const attemptsOf = async (endpointId: string) =>
  (
    await env.DB.prepare(
      "SELECT attempt, status_code AS status, error, next_retry_at AS next, response FROM webhook_attempts WHERE endpoint_id = ? ORDER BY id",
    )
      .bind(endpointId)
      .all<{ attempt: number; status: number | null; error: string | null; next: number | null; response: string }>()
  ).results;

const deliveryOf = (key: { eventId: string; endpointId: string }) =>
  row<{ status: string; attempts: number; next_attempt_at: number }>(
    "SELECT status, attempts, next_attempt_at FROM webhook_deliveries WHERE event_id = ? AND endpoint_id = ?",
    key.eventId,
    key.endpointId,
  );

/** The consumer's deps on a clock the test moves. */
const onClock = (clock: { now: number }) => webhookDeliveryDeps(env, () => clock.now);

describe("webhook deliveries", () => {
  it("reach the receiver through the queue, signed so that standardwebhooks and svix verify them", async () => {
    const account = await newAccount("hooks-signed");
    const name = `signed-${crypto.randomUUID()}`;
    const endpoint = await insertEndpoint(account.id, hookUrl(name));
    const keys = [
      await insertDelivery(account.id, endpoint.id, Date.now()),
      await insertDelivery(account.id, endpoint.id, Date.now()),
    ];
    await announceDeliveries(env.WEBHOOK_DELIVERIES, keys);
    const requests = await until("two deliveries", async () => {
      const got = await received(name);
      return got.length >= 2 && got;
    });
    expect(requests.map((r) => r.headers["webhook-id"]).sort()).toEqual(keys.map((k) => k.eventId).sort());
    const payload = JSON.parse(requests[0]!.body);
    expect(payload).toEqual({
      type: "webhook.test",
      timestamp: expect.any(String),
      data: { endpoint_id: endpoint.id },
    });
    expect(requests[0]!.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    expect(await verified(name, endpoint.secret)).toEqual(requests.map(() => ({ standardwebhooks: true, svix: true })));
    expect(await verified(name, newSecret())).toEqual(requests.map(() => ({ standardwebhooks: false, svix: false })));
    await until("the deliveries recorded", async () => (await deliveryOf(keys[1]!))?.status === "delivered");
  });

  it("carry the upload as the owner's GET answers it, a locked one's links unsigned and nothing more", async () => {
    const account = await newAccount("hooks-payload");
    const name = `payload-${crypto.randomUUID()}`;
    await insertEndpoint(account.id, hookUrl(name), { events: JSON.stringify(["upload.created"]) });
    const plain = (await upload(account.full, await uniquePng("hooks-payload-1"), { title: "plain" })).body.data;
    const fields = { title: "locked", visibility: "private", password: "a long enough password" };
    const locked = (await upload(account.full, await uniquePng("hooks-payload-2"), fields)).body.data;
    const requests = await until("two deliveries", async () => {
      const got = await received(name);
      return got.length >= 2 && got;
    });
    const byId = new Map(requests.map((r) => [JSON.parse(r.body).data.id, JSON.parse(r.body)]));
    const answer = async (id: string) => (await json(request(`/api/${id}`, { key: account.full }))).body.data;
    expect(byId.get(plain.id).data).toEqual(await answer(plain.id));
    const owners = await answer(locked.id);
    const unsigned = (link: string) => link.split("?")[0];
    // The owner's answer signs a locked upload's path and thumb; the event leaves them unsigned.
    expect(byId.get(locked.id).data).toEqual({ ...owners, path: unsigned(owners.path), thumb: unsigned(owners.thumb) });
    expect(owners.path).toContain("?");
  });

  it("are signed with both secrets during a rotation's overlap, and the new one only after", async () => {
    const account = await newAccount("hooks-rotated");
    const [before, after] = [newSecret(), newSecret()];
    const name = `rotated-${crypto.randomUUID()}`;
    const endpoint = await insertEndpoint(account.id, hookUrl(name), {
      secret: after,
      previousSecret: before,
      previousSecretUntil: Date.now() + 3600_000,
    });
    const clock = { now: Date.now() };
    await deliver(onClock(clock), await insertDelivery(account.id, endpoint.id, clock.now));
    expect((await received(name))[0]!.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(await verified(name, before)).toEqual([{ standardwebhooks: true, svix: true }]);
    expect(await verified(name, after)).toEqual([{ standardwebhooks: true, svix: true }]);
    clock.now += 3600_000 + 1;
    await deliver(onClock(clock), await insertDelivery(account.id, endpoint.id, clock.now));
    expect((await verified(name, before))[1]).toEqual({ standardwebhooks: false, svix: false });
  });

  it("are tried again on the schedule's delays after a failure, and sent at most twice for a 500 then a 200", async () => {
    const account = await newAccount("hooks-retry");
    const name = `retry-${crypto.randomUUID()}`;
    const endpoint = await insertEndpoint(account.id, hookUrl(name, "statuses/500,200"));
    const clock = { now: Date.now() };
    const key = await insertDelivery(account.id, endpoint.id, clock.now);
    const start = clock.now;
    expect(await deliver(onClock(clock), key)).toEqual({ retryInS: RETRY_DELAYS_S[0] });
    expect(await deliveryOf(key)).toMatchObject({ status: "pending", attempts: 1, next_attempt_at: start + 5000 });
    // A second message for it, early: nothing is sent; it comes back when the attempt is due.
    clock.now += 1000;
    expect(await deliver(onClock(clock), key)).toEqual({ retryInS: 4 });
    clock.now = start + 5000;
    expect(await deliver(onClock(clock), key)).toEqual({ ack: true });
    expect(await deliver(onClock(clock), key)).toEqual({ ack: true });
    expect(await received(name)).toHaveLength(2);
    expect(await deliveryOf(key)).toMatchObject({ status: "delivered", attempts: 2 });
    expect((await attemptsOf(endpoint.id)).map((a) => [a.attempt, a.status, a.next])).toEqual([
      [1, 500, start + 5000],
      [2, 200, null],
    ]);
  });

  it("follow the whole schedule for a receiver that always fails, then give up", async () => {
    const account = await newAccount("hooks-schedule");
    const name = `schedule-${crypto.randomUUID()}`;
    const endpoint = await insertEndpoint(account.id, hookUrl(name, "statuses/503"));
    const clock = { now: Date.now() };
    const key = await insertDelivery(account.id, endpoint.id, clock.now);
    const delays: number[] = [];
    for (;;) {
      const outcome = await deliver(onClock(clock), key);
      if (!("retryInS" in outcome)) break;
      delays.push(outcome.retryInS);
      clock.now += outcome.retryInS * 1000;
    }
    expect(delays).toEqual([...RETRY_DELAYS_S]);
    expect(delays.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(24 * 3600);
    expect(await deliveryOf(key)).toMatchObject({ status: "failed", attempts: RETRY_DELAYS_S.length + 1 });
    expect(await received(name)).toHaveLength(RETRY_DELAYS_S.length + 1);
  });

  it("disable an endpoint whose every attempt failed for 5 days, and say why", async () => {
    const account = await newAccount("hooks-disable");
    const name = `disable-${crypto.randomUUID()}`;
    const endpoint = await insertEndpoint(account.id, hookUrl(name, "statuses/500"));
    const clock = { now: Date.now() };
    const start = clock.now;
    for (const at of [start, start + 3 * 86_400_000, start + DISABLE_AFTER_MS - 1000]) {
      clock.now = at;
      await deliver(onClock(clock), await insertDelivery(account.id, endpoint.id, at));
    }
    const healthy = await row<{ disabled_at: number | null; failing_since: number }>(
      "SELECT disabled_at, failing_since FROM webhook_endpoints WHERE id = ?",
      endpoint.id,
    );
    expect(healthy).toEqual({ disabled_at: null, failing_since: start });
    clock.now = start + DISABLE_AFTER_MS;
    await deliver(onClock(clock), await insertDelivery(account.id, endpoint.id, clock.now));
    const disabled = await row<{ disabled_at: number; disabled_reason: string }>(
      "SELECT disabled_at, disabled_reason FROM webhook_endpoints WHERE id = ?",
      endpoint.id,
    );
    expect(disabled!.disabled_at).toBe(clock.now);
    expect(disabled!.disabled_reason).toMatch(/failed for 5 days; the last: HTTP 500/);
    // A disabled endpoint is sent nothing more: its waiting deliveries end without an attempt.
    const sent = (await received(name)).length;
    await deliver(onClock(clock), await insertDelivery(account.id, endpoint.id, clock.now));
    expect(await received(name)).toHaveLength(sent);
  });

  it("a success ends an endpoint's failing spell", async () => {
    const account = await newAccount("hooks-recover");
    const name = `recover-${crypto.randomUUID()}`;
    const endpoint = await insertEndpoint(account.id, hookUrl(name, "statuses/500,204"));
    const clock = { now: Date.now() };
    await deliver(onClock(clock), await insertDelivery(account.id, endpoint.id, clock.now));
    await deliver(onClock(clock), await insertDelivery(account.id, endpoint.id, clock.now));
    expect(await row("SELECT failing_since FROM webhook_endpoints WHERE id = ?", endpoint.id)).toEqual({
      failing_since: null,
    });
  });
});
