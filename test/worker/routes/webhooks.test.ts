import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { Webhook as SvixWebhook } from "svix";
import { describe, expect, it } from "vitest";
import { TEST_MESSAGE } from "../../../src/webhooks/test-event";
import { json, newAccount, request, type TestAccount } from "../helpers";
import { hookUrl, received, until, verified } from "../webhooks/endpoint-rows";

type Answer = { status: number; body: any };

async function call(key: string, path: string, method = "GET", body?: unknown): Promise<Answer> {
  const res = await json(request(`/api${path}`, { key, method, ...(body === undefined ? {} : { json: body }) }));
  return { status: res.status, body: res.body };
}

/** A receiver's URL the tests may name: loopback is allowed here (UNSAFE_ALLOW_LOOPBACK_LINKS), port 9 discards. */
const RECEIVER = "http://127.0.0.1:9/hook";

const newEndpoint = async (account: TestAccount, fields: Record<string, unknown> = {}) => {
  const res = await call(account.full, "/webhooks", "POST", { url: RECEIVER, ...fields });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as Record<string, any> & { id: string; secret: string };
};

const endpointRow = (id: string) =>
  env.DB.prepare("SELECT * FROM webhook_endpoints WHERE id = ?").bind(id).first<Record<string, any>>();

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/;
const SECRET = /^whsec_[A-Za-z0-9+/]{32}$/;

describe("webhook endpoints: create, read, list, change, delete", () => {
  it("creates one and answers its secret once, in Standard Webhooks' format", async () => {
    const account = await newAccount("webhooks");
    const res = await call(account.full, "/webhooks", "POST", {
      url: RECEIVER,
      events: ["upload.created", "album.deleted", "upload.created"],
      description: " Mine ",
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ type: "success", msg: "success" });
    const made = res.body.data;
    expect(Object.keys(made).sort()).toEqual(
      [
        "created_at",
        "description",
        "disabled_at",
        "disabled_reason",
        "dropped_events",
        "enabled",
        "events",
        "failing_since",
        "id",
        "secret",
        "updated_at",
        "url",
      ].sort(),
    );
    expect(made).toMatchObject({
      url: RECEIVER,
      description: "Mine",
      events: ["upload.created", "album.deleted"],
      enabled: true,
      disabled_at: null,
      disabled_reason: null,
      failing_since: null,
      dropped_events: 0,
    });
    expect(made.id).toMatch(/^ep_[0-9A-Za-z]{16}$/);
    expect(made.created_at).toMatch(ISO);
    expect(made.secret).toMatch(SECRET);
    // The package receivers use takes it as it is: what it signs, it verifies.
    const hook = new Webhook(made.secret);
    const payload = JSON.stringify({ type: "webhook.test", timestamp: new Date().toISOString(), data: {} });
    const at = new Date();
    const signature = hook.sign("msg_1", at, payload);
    const headers = { "webhook-id": "msg_1", "webhook-timestamp": String(Math.floor(at.getTime() / 1000)) };
    expect(hook.verify(payload, { ...headers, "webhook-signature": signature })).toBeTruthy();
    const signed = { ...headers, "webhook-signature": signature };
    expect(() => new SvixWebhook(made.secret).verify(payload, signed)).not.toThrow();
    expect(() => new SvixWebhook(`whsec_${btoa("another secret of 24 byte")}`).verify(payload, signed)).toThrow();
    // Shown once: reads and the listing never carry it.
    const { secret, ...shown } = made;
    const read = await call(account.full, `/webhooks/${made.id}`);
    expect(read.body).toEqual({ type: "success", msg: "success", data: shown });
    const list = await call(account.full, "/webhooks");
    expect(list.body).toEqual({ type: "success", data: [shown] });
    const row = await endpointRow(made.id);
    expect(row).toMatchObject({ secret, origin: "http://media.test", account_id: account.id });
  });

  it("takes every event type by default, or as *, or null; a form's types separated by commas", async () => {
    const account = await newAccount("webhooks");
    expect((await newEndpoint(account)).events).toBe("*");
    expect((await newEndpoint(account, { events: "*" })).events).toBe("*");
    expect((await newEndpoint(account, { events: null })).events).toBe("*");
    expect((await endpointRow((await newEndpoint(account)).id))!.events).toBeNull();
    const form = new FormData();
    form.append("url", RECEIVER);
    form.append("events", "upload.deleted, upload.expired");
    const formed = await json(request("/api/webhooks", { key: account.full, method: "POST", body: form }));
    expect(formed.body.data.events).toEqual(["upload.deleted", "upload.expired"]);
  });

  it("lists the account's endpoints newest first, and no other account's", async () => {
    const account = await newAccount("webhooks");
    const other = await newAccount("webhooks");
    const first = await newEndpoint(account);
    const second = await newEndpoint(account);
    await newEndpoint(other);
    const list = await call(account.full, "/webhooks");
    expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([second.id, first.id]);
  });

  it("changes only the fields sent, and checks a new URL as at creation", async () => {
    const account = await newAccount("webhooks");
    const made = await newEndpoint(account, { description: "d", events: ["upload.created"] });
    const changed = await call(account.full, `/webhooks/${made.id}`, "PATCH", {
      url: "http://127.0.0.1:9/other",
      events: "*",
    });
    expect(changed.status).toBe(200);
    expect(changed.body.data).toMatchObject({ url: "http://127.0.0.1:9/other", events: "*", description: "d" });
    const cleared = await call(account.full, `/webhooks/${made.id}`, "PATCH", { description: "" });
    expect(cleared.body.data).toMatchObject({ description: null, url: "http://127.0.0.1:9/other" });
    const refused = await call(account.full, `/webhooks/${made.id}`, "PATCH", { url: "https://private.test/hook" });
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toMatch(/address not allowed: private\.test is 10\.0\.0\.7/);
    expect((await call(account.full, `/webhooks/${made.id}`)).body.data.url).toBe("http://127.0.0.1:9/other");
  });

  it("disables one by hand, and enables it again, forgetting why and since when it failed", async () => {
    const account = await newAccount("webhooks");
    const made = await newEndpoint(account);
    const off = await call(account.full, `/webhooks/${made.id}`, "PATCH", { enabled: false });
    expect(off.body.data).toMatchObject({ enabled: false, disabled_reason: "Disabled through the API." });
    expect(off.body.data.disabled_at).toMatch(ISO);
    // As delivery leaves one that failed for days.
    const since = Date.now() - 5 * 86_400_000;
    await env.DB.prepare(
      "UPDATE webhook_endpoints SET disabled_reason = 'Every attempt failed for 5 days.', failing_since = ? WHERE id = ?",
    )
      .bind(since, made.id)
      .run();
    const listed = (await call(account.full, "/webhooks")).body.data[0];
    expect(listed).toMatchObject({ enabled: false, disabled_reason: "Every attempt failed for 5 days." });
    expect(listed.failing_since).toMatch(ISO);
    const on = await call(account.full, `/webhooks/${made.id}`, "PATCH", { enabled: "true" });
    expect(on.body.data).toMatchObject({
      enabled: true,
      disabled_at: null,
      disabled_reason: null,
      failing_since: null,
    });
  });

  it("deletes one with its deliveries and their attempts", async () => {
    const account = await newAccount("webhooks");
    const made = await newEndpoint(account);
    const tested = await call(account.full, `/webhooks/${made.id}/test`, "POST");
    expect(tested.status).toBe(202);
    await insertAttempts(made.id, 1);
    const gone = await call(account.full, `/webhooks/${made.id}`, "DELETE");
    expect(gone).toEqual({ status: 200, body: { type: "success", msg: "Deleted." } });
    expect(await endpointRow(made.id)).toBeNull();
    for (const table of ["webhook_deliveries", "webhook_attempts"]) {
      const left = await env.DB.prepare(`SELECT count(*) AS n FROM ${table} WHERE endpoint_id = ?`)
        .bind(made.id)
        .first<{ n: number }>();
      expect(left?.n, table).toBe(0);
    }
    expect((await call(account.full, `/webhooks/${made.id}`, "DELETE")).status).toBe(404);
  });
});

describe("webhook endpoints: refusals", () => {
  it("refuses URLs that are not https, carry credentials, are too long or reach a non-public address", async () => {
    const account = await newAccount("webhooks");
    const refusals: [unknown, RegExp][] = [
      [undefined, /^url: must be the URL to send events to$/],
      ["", /^url: must be the URL to send events to$/],
      ["not a url", /^url: must be an absolute URL\.$/],
      ["ftp://127.0.0.1/hook", /^url: must be an https URL \(got ftp\)\.$/],
      ["http://user:pw@127.0.0.1:9/hook", /^url: must not carry a user name or password\.$/],
      [`https://127.0.0.1/${"a".repeat(2048)}`, /^url: must be at most 2048 characters\.$/],
      ["https://10.0.0.1/hook", /address not allowed: 10\.0\.0\.1 is a private address/],
      ["https://169.254.169.254/latest", /address not allowed: 169\.254\.169\.254 is a link-local address/],
      ["https://private.test/hook", /address not allowed: private\.test is 10\.0\.0\.7, a private address/],
      ["https://metadata.test/hook", /metadata\.test is 169\.254\.169\.254, a link-local address/],
      ["https://mixed.test/hook", /mixed\.test is 192\.168\.1\.1, a private address/],
      ["https://nowhere.test/hook", /^url: DNS lookup failed/],
    ];
    for (const [url, message] of refusals) {
      const res = await call(account.full, "/webhooks", "POST", url === undefined ? {} : { url });
      expect(res.status, String(url)).toBe(422);
      expect(res.body.type).toBe("error");
      expect(res.body.errors, String(url)).toMatch(message);
    }
    expect((await call(account.full, "/webhooks")).body.data).toEqual([]);
  });

  it("refuses event lists that are empty or name a type there is not", async () => {
    const account = await newAccount("webhooks");
    for (const events of [[], "", ["upload.nope"], ["webhook.test"], [1], { a: 1 }]) {
      const res = await call(account.full, "/webhooks", "POST", { url: RECEIVER, events });
      expect(res.status, JSON.stringify(events)).toBe(422);
      expect(res.body.errors).toMatch(/^events/);
    }
    const long = await call(account.full, "/webhooks", "POST", { url: RECEIVER, description: "x".repeat(501) });
    expect(long.status).toBe(422);
    expect(long.body.errors).toBe("description: must be at most 500 characters");
  });

  it("refuses an 11th endpoint with a 409", async () => {
    const account = await newAccount("webhooks");
    await Promise.all(Array.from({ length: 10 }, () => newEndpoint(account)));
    const eleventh = await call(account.full, "/webhooks", "POST", { url: RECEIVER });
    expect(eleventh).toEqual({
      status: 409,
      body: { type: "error", errors: "An account may have at most 10 webhook endpoints." },
    });
    expect((await call(account.full, "/webhooks")).body.data).toHaveLength(10);
  });

  it("refuses the upload-only key on every route, as other full-key routes do", async () => {
    const account = await newAccount("webhooks");
    const made = await newEndpoint(account);
    const albums = await call(account.upload, "/albums");
    expect(albums.status).toBe(401);
    const routes: [string, string][] = [
      ["/webhooks", "POST"],
      ["/webhooks", "GET"],
      [`/webhooks/${made.id}`, "GET"],
      [`/webhooks/${made.id}`, "PATCH"],
      [`/webhooks/${made.id}`, "DELETE"],
      [`/webhooks/${made.id}/rotate`, "POST"],
      [`/webhooks/${made.id}/test`, "POST"],
      [`/webhooks/${made.id}/deliveries`, "GET"],
    ];
    for (const [path, method] of routes) {
      const res = await call(account.upload, path, method, method === "GET" ? undefined : { url: RECEIVER });
      expect(res, `${method} ${path}`).toEqual(albums);
    }
    expect((await call(account.full, "/webhooks")).body.data).toHaveLength(1);
    expect((await json(request("/api/webhooks"))).status).toBe(401);
  });

  it("answers another account's endpoint as one that does not exist", async () => {
    const owner = await newAccount("webhooks");
    const other = await newAccount("webhooks");
    const made = await newEndpoint(owner);
    const routes: [string, string, unknown?][] = [
      [`/webhooks/${made.id}`, "GET"],
      [`/webhooks/${made.id}`, "PATCH", { description: "mine" }],
      [`/webhooks/${made.id}`, "DELETE"],
      [`/webhooks/${made.id}/rotate`, "POST"],
      [`/webhooks/${made.id}/test`, "POST"],
      [`/webhooks/${made.id}/deliveries`, "GET"],
      ["/webhooks/ep_nosuchendpoint0", "GET"],
    ];
    for (const [path, method, body] of routes) {
      const res = await call(other.full, path, method, body);
      expect(res, `${method} ${path}`).toEqual({
        status: 404,
        body: { type: "error", errors: "No webhook endpoint with that id on this account." },
      });
    }
    const row = await endpointRow(made.id);
    expect(row).toMatchObject({ description: null, previous_secret: null, secret: made.secret });
  });

  it("answers other methods with a 405", async () => {
    const account = await newAccount("webhooks");
    const made = await newEndpoint(account);
    for (const [path, method] of [
      ["/webhooks", "PUT"],
      [`/webhooks/${made.id}`, "POST"],
      [`/webhooks/${made.id}/rotate`, "GET"],
      [`/webhooks/${made.id}/test`, "GET"],
      [`/webhooks/${made.id}/deliveries`, "POST"],
    ] as const) {
      expect((await call(account.full, path, method)).status, `${method} ${path}`).toBe(405);
    }
  });
});

/** `n` attempts of one event each, written as delivery writes them, the last with the highest id. */
async function insertAttempts(endpointId: string, n: number) {
  const now = Date.now();
  const rows = Array.from({ length: n }, (_, i) =>
    env.DB.prepare(
      `INSERT INTO webhook_attempts (endpoint_id, event_id, type, attempt, status_code, error, duration_ms,
        next_retry_at, response, created_at) VALUES (?, ?, 'upload.created', ?, ?, ?, ?, ?, ?, ?)`,
    ).bind(
      endpointId,
      `msg_${i}`,
      (i % 8) + 1,
      i % 2 ? 500 : null,
      i % 2 ? null : "connection refused",
      10 + i,
      i % 3 ? now + i * 1000 : null,
      i % 2 ? `answer ${i}` : null,
      now + i,
    ),
  );
  await env.DB.batch(rows);
}

describe("webhook endpoints: rotation, test events, deliveries", () => {
  it("rotates the secret, answering the new one once and keeping the old one 24 hours", async () => {
    const account = await newAccount("webhooks");
    const made = await newEndpoint(account);
    const rotated = await call(account.full, `/webhooks/${made.id}/rotate`, "POST");
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.secret).toMatch(SECRET);
    expect(rotated.body.data.secret).not.toBe(made.secret);
    const row = await endpointRow(made.id);
    expect(row).toMatchObject({ secret: rotated.body.data.secret, previous_secret: made.secret });
    expect(row!.previous_secret_until - row!.updated_at).toBe(24 * 3_600_000);
    expect((await call(account.full, `/webhooks/${made.id}`)).body.data).not.toHaveProperty("secret");
  });

  it("writes one webhook.test event and one delivery, to that endpoint only", async () => {
    const account = await newAccount("webhooks");
    const made = await newEndpoint(account, { events: ["upload.created"] });
    await newEndpoint(account);
    const before = Date.now();
    const res = await call(account.full, `/webhooks/${made.id}/test`, "POST");
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ type: "success", msg: "Queued." });
    const eventId = res.body.data.event_id;
    expect(eventId).toMatch(/^msg_[0-9A-Za-z]{24}$/);
    const event = await env.DB.prepare("SELECT * FROM webhook_events WHERE id = ?")
      .bind(eventId)
      .first<Record<string, any>>();
    expect(event).toMatchObject({ account_id: account.id, type: "webhook.test", detail: null });
    expect(JSON.parse(event!.subject)).toEqual({ endpoint_id: made.id, message: expect.stringMatching(/test/) });
    const { results } = await env.DB.prepare("SELECT * FROM webhook_deliveries WHERE event_id = ?")
      .bind(eventId)
      .all<Record<string, any>>();
    expect(results.map((d) => d.endpoint_id)).toEqual([made.id]);
    expect(results[0]!.next_attempt_at).toBeGreaterThanOrEqual(before);
  });

  it("delivers the test event, signed with the secret answered, and with both secrets after a rotation", async () => {
    const account = await newAccount("webhooks");
    const name = `routes-${crypto.randomUUID()}`;
    const made = await newEndpoint(account, { url: hookUrl(name) });
    const first = (await call(account.full, `/webhooks/${made.id}/test`, "POST")).body.data.event_id;
    const [request1] = await until("the test event", async () => {
      const got = await received(name);
      return got.length >= 1 && got;
    });
    expect(request1!.headers["webhook-id"]).toBe(first);
    expect(JSON.parse(request1!.body)).toEqual({
      type: "webhook.test",
      timestamp: expect.stringMatching(ISO),
      data: { endpoint_id: made.id, message: TEST_MESSAGE },
    });
    expect(await verified(name, made.secret)).toEqual([{ standardwebhooks: true, svix: true }]);
    const attempts = await until("the attempt listed", async () => {
      const { data } = (await call(account.full, `/webhooks/${made.id}/deliveries`)).body;
      return data.length >= 1 && data;
    });
    expect(attempts[0]).toMatchObject({ event_id: first, type: "webhook.test", attempt: 1, status_code: 200 });

    const rotated = (await call(account.full, `/webhooks/${made.id}/rotate`, "POST")).body.data.secret;
    await call(account.full, `/webhooks/${made.id}/test`, "POST");
    const [, request2] = await until("the second test event", async () => {
      const got = await received(name);
      return got.length >= 2 && got;
    });
    expect(request2!.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    const [oldSecret, newSecret] = [await verified(name, made.secret), await verified(name, rotated)];
    expect(oldSecret[1]).toEqual({ standardwebhooks: true, svix: true });
    expect(newSecret).toEqual([
      { standardwebhooks: false, svix: false },
      { standardwebhooks: true, svix: true },
    ]);
  });

  it("refuses a test event for a disabled endpoint with a 409", async () => {
    const account = await newAccount("webhooks");
    const made = await newEndpoint(account);
    await call(account.full, `/webhooks/${made.id}`, "PATCH", { enabled: false });
    const res = await call(account.full, `/webhooks/${made.id}/test`, "POST");
    expect(res.status).toBe(409);
    expect(res.body.errors).toMatch(/disabled/);
    const events = await env.DB.prepare("SELECT count(*) AS n FROM webhook_events WHERE account_id = ?")
      .bind(account.id)
      .first<{ n: number }>();
    expect(events?.n).toBe(0);
  });

  it("lists the last 100 attempts, newest first", async () => {
    const account = await newAccount("webhooks");
    const made = await newEndpoint(account);
    expect((await call(account.full, `/webhooks/${made.id}/deliveries`)).body).toEqual({ type: "success", data: [] });
    await insertAttempts(made.id, 105);
    const res = await call(account.full, `/webhooks/${made.id}/deliveries`);
    expect(res.status).toBe(200);
    const data = res.body.data;
    expect(data).toHaveLength(100);
    expect(data[0].event_id).toBe("msg_104");
    expect(data[99].event_id).toBe("msg_5");
    expect(Object.keys(data[0]).sort()).toEqual(
      [
        "attempt",
        "created_at",
        "duration_ms",
        "error",
        "event_id",
        "next_retry_at",
        "response",
        "status_code",
        "type",
      ].sort(),
    );
    expect(data[0]).toMatchObject({
      type: "upload.created",
      attempt: 1,
      status_code: null,
      error: "connection refused",
      duration_ms: 114,
      response: null,
    });
    expect(data[0].next_retry_at).toMatch(ISO);
    expect(data[1]).toMatchObject({ status_code: 500, error: null, response: "answer 103" });
    expect(data[1].created_at).toMatch(ISO);
    expect(data[2].next_retry_at).toBeNull();
  });
});
