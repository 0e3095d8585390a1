import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { clockedApp, fixture, json, newAccount, ownNetwork, request, upload, uniquePng } from "../helpers";

describe("API keys", () => {
  it("accepts the X-API-Key header and the key query parameter; the header wins", async () => {
    const a = await newAccount();
    const b = await newAccount();
    expect((await json(request(`/api?key=${a.full}`))).status).toBe(200);
    expect((await json(request("/api", { headers: { "X-API-Key": a.full } }))).status).toBe(200);
    // Both present: the header's key is the one used (b's list is empty, a's is not).
    await upload(a.full, await uniquePng("header-wins"));
    const both = await json(request(`/api?key=${a.full}`, { headers: { "X-API-Key": b.full } }));
    expect(both.status).toBe(200);
    expect(both.body.meta.total).toBe(0);
    const invalidHeader = await json(request(`/api?key=${a.full}`, { headers: { "X-API-Key": "fk_wrong" } }));
    expect(invalidHeader.status).toBe(401);
  });

  it.each([
    ["no key", {}],
    ["an unknown key", { "X-API-Key": "fk_0000000000000000000000000000000" }],
    ["an empty key", { "X-API-Key": "" }],
  ])("answers %s with 401 in the error envelope", async (_label, headers) => {
    for (const [method, path] of [
      ["GET", "/api"],
      ["POST", "/api"],
      ["GET", "/api/x"],
      ["PATCH", "/api/x"],
      ["DELETE", "/api/x"],
    ] as const) {
      const res = await json(request(path, { method, headers }));
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.body).toEqual({ type: "error", errors: expect.any(String) });
    }
  });

  it("lets the upload-only key upload, and nothing else", async () => {
    const account = await newAccount();
    const up = await upload(account.upload, await uniquePng("upload-key"));
    expect(up.status).toBe(200);
    const id = up.body.data.id;
    for (const [method, path] of [
      ["GET", ""],
      ["GET", `/${id}`],
      ["PATCH", `/${id}`],
      ["DELETE", `/${id}`],
    ]) {
      const res = await json(
        request(`/api${path!}`, {
          key: account.upload,
          method,
          body: method === "PATCH" ? JSON.stringify({ title: "x" }) : undefined,
          headers: { "Content-Type": "application/json" },
        }),
      );
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.body.type).toBe("error");
    }
    // The upload is still there and unchanged.
    const read = await json(request(`/api/${id}`, { key: account.full }));
    expect(read.body.data.title).toBeNull();
  });

  it("issues keys with a kind prefix, and stores only their hashes", async () => {
    const account = await newAccount();
    expect(account.full).toMatch(/^fk_[0-9A-Za-z]{32}$/);
    expect(account.upload).toMatch(/^uk_[0-9A-Za-z]{32}$/);
    const rows = await env.DB.prepare("SELECT key_hash FROM api_keys WHERE account_id = ?")
      .bind(account.id)
      .all<{ key_hash: string }>();
    expect(rows.results).toHaveLength(2);
    for (const { key_hash } of rows.results) {
      expect(key_hash).toMatch(/^[0-9a-f]{64}$/);
      expect([account.full, account.upload]).not.toContain(key_hash);
    }
  });

  it("invalidates the old key at once when a key is regenerated", async () => {
    const account = await newAccount();
    const res = await json(
      request(`/admin/accounts/${account.id}/keys`, {
        admin: true,
        method: "POST",
        json: { kind: "full" },
      }),
    );
    expect(res.status).toBe(200);
    expect(res.body.data.key).toMatch(/^fk_/);
    expect((await json(request("/api", { key: account.full }))).status).toBe(401);
    expect((await json(request("/api", { key: res.body.data.key }))).status).toBe(200);
    // The upload key is untouched.
    expect((await upload(account.upload, await uniquePng("regen"))).status).toBe(200);

    const up = await json(
      request(`/admin/accounts/${account.id}/keys`, {
        admin: true,
        method: "POST",
        json: { kind: "upload" },
      }),
    );
    expect((await upload(account.upload, await uniquePng("regen-2"))).status).toBe(401);
    expect((await upload(up.body.data.key, await uniquePng("regen-3"))).status).toBe(200);
  });
});

describe("bans", () => {
  it("refuses uploads from a banned account with 403, and unbanning restores them at once", async () => {
    const account = await newAccount();
    expect((await request(`/admin/accounts/${account.id}/ban`, { admin: true, method: "PUT" })).status).toBe(200);
    const refused = await upload(account.full, await uniquePng("banned"));
    expect(refused.status).toBe(403);
    expect(refused.body.type).toBe("error");
    expect((await upload(account.upload, await uniquePng("banned-2"))).status).toBe(403);
    // Reading is not uploading: the spec bans uploads only.
    expect((await json(request("/api", { key: account.full }))).status).toBe(200);
    expect((await request(`/admin/accounts/${account.id}/ban`, { admin: true, method: "DELETE" })).status).toBe(200);
    expect((await upload(account.full, await uniquePng("unbanned"))).status).toBe(200);
  });

  it("refuses uploads from a banned IP (CF-Connecting-IP) for every account", async () => {
    const account = await newAccount();
    expect((await request("/admin/ip-bans/203.0.113.7", { admin: true, method: "PUT" })).status).toBe(200);
    const ip = "203.0.113.7";
    expect((await upload(account.full, await uniquePng("ip"), {}, { ip })).status).toBe(403);
    expect((await upload(account.full, await uniquePng("ip-other"), {}, { ip: "203.0.113.8" })).status).toBe(200);
    expect((await request("/admin/ip-bans/203.0.113.7", { admin: true, method: "DELETE" })).status).toBe(200);
    expect((await upload(account.full, await uniquePng("ip-after"), {}, { ip })).status).toBe(200);
    expect((await request("/admin/ip-bans/203.0.113.7", { admin: true, method: "DELETE" })).status).toBe(404);
  });

  it("bans IPv6 addresses too", async () => {
    const account = await newAccount();
    expect((await request("/admin/ip-bans/2001:db8::1", { admin: true, method: "PUT" })).status).toBe(200);
    expect((await upload(account.full, await uniquePng("v6"), {}, { ip: "2001:db8::1" })).status).toBe(403);
  });
});

describe("admin API", () => {
  it("does not exist without ADMIN_TOKEN", async () => {
    const app = { bindings: { ADMIN_TOKEN: undefined } };
    const res = await request("/admin/accounts", { method: "POST", json: {}, app });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ type: "error", errors: expect.any(String) });
  });

  it("needs the bearer token", async () => {
    for (const auth of [undefined, "Bearer wrong", "Basic dGVzdA==", `Bearer ${env.ADMIN_TOKEN}x`]) {
      const res = await request("/admin/accounts", {
        method: "POST",
        headers: auth ? { Authorization: auth } : {},
        json: { name: "x" },
      });
      expect(res.status, String(auth)).toBe(401);
    }
  });

  /** The admin API on a clock the test moves, from a client IP of its own (or the one given). */
  function adminService(overrides: Partial<Cloudflare.Env> = {}) {
    const app = clockedApp(overrides);
    const ownIp = `${ownNetwork()}::1`;
    const call = async (token: string | undefined, ip = ownIp) => {
      const headers: Record<string, string> = { "Content-Type": "application/json" };
      if (token !== undefined) headers.Authorization = `Bearer ${token}`;
      const res = await app.call("/admin/accounts", {
        method: "POST",
        ip,
        headers,
        body: JSON.stringify({ name: "x" }),
      });
      return { status: res.status, retryAfter: res.headers.get("Retry-After"), body: (await res.json()) as any };
    };
    return { call, advance: (seconds: number) => (app.clock.now += seconds * 1000) };
  }

  it("throttles wrong tokens per IP, answering none while it waits, with growing waits; the right token resets the count", async () => {
    const s = adminService();
    for (let i = 0; i < 5; i++) expect((await s.call(`wrong-${i}`)).status).toBe(401);
    const throttled = await s.call("wrong");
    expect(throttled).toMatchObject({
      status: 429,
      retryAfter: "1",
      body: { type: "error", errors: expect.stringMatching(/admin token/) },
    });
    // Nothing is answered while the IP waits, the right token included.
    expect((await s.call(env.ADMIN_TOKEN)).status).toBe(429);
    expect((await s.call(undefined)).status).toBe(429);
    // Another IP is not held back.
    expect((await s.call("wrong", `${ownNetwork()}::1`)).status).toBe(401);
    s.advance(1);
    expect((await s.call("wrong")).status).toBe(401);
    expect((await s.call("wrong")).retryAfter).toBe("2");
    s.advance(2);
    expect((await s.call(env.ADMIN_TOKEN)).status).toBe(201);
    for (let i = 0; i < 5; i++) expect((await s.call("wrong")).status).toBe(401);
    expect((await s.call("wrong")).status).toBe(429);
  });

  it("counts wrong tokens before answering: of 20 simultaneous ones, 5 are answered", async () => {
    const s = adminService();
    const statuses = (await Promise.all(Array.from({ length: 20 }, (_, i) => s.call(`wrong-${i}`)))).map(
      (r) => r.status,
    );
    expect(statuses.filter((x) => x === 401)).toHaveLength(5);
    expect(statuses.filter((x) => x === 429)).toHaveLength(15);
  });

  it("never holds back the operator's parallel requests", async () => {
    const s = adminService();
    const statuses = (await Promise.all(Array.from({ length: 20 }, () => s.call(env.ADMIN_TOKEN)))).map(
      (r) => r.status,
    );
    expect(statuses).toEqual(Array(20).fill(201));
  });

  it("throttles an IPv6 client by its /64", async () => {
    const s = adminService();
    const network = ownNetwork();
    for (let i = 1; i <= 5; i++) expect((await s.call("wrong", `${network}:${i}::${i}`)).status).toBe(401);
    expect((await s.call("wrong", `${network}:ffff:ffff:ffff:ffff`)).status).toBe(429);
    expect((await s.call(env.ADMIN_TOKEN, `${network}::abcd`)).status).toBe(429);
    expect((await s.call("wrong", `${ownNetwork()}:5::5`)).status).toBe(401);
  });

  it("is off, as without a token, when ADMIN_TOKEN is shorter than 32 characters", async () => {
    const short = "a".repeat(31);
    const s = adminService({ ADMIN_TOKEN: short });
    expect(await s.call(short)).toMatchObject({ status: 404, body: { type: "error", errors: expect.any(String) } });
    const long = "b".repeat(32);
    expect((await adminService({ ADMIN_TOKEN: long }).call(long)).status).toBe(201);
    // The tests' own token is long enough.
    expect(env.ADMIN_TOKEN!.length).toBeGreaterThanOrEqual(32);
  });

  it("validates its input", async () => {
    expect((await json(request("/admin/accounts", { admin: true, method: "POST", json: {} }))).status).toBe(422);
    expect(
      (
        await json(
          request("/admin/accounts", {
            admin: true,
            method: "POST",
            json: { name: "   " },
          }),
        )
      ).status,
    ).toBe(422);
    const bad = await json(request("/admin/accounts", { admin: true, method: "POST", json: "not json", headers: {} }));
    expect(bad.status).toBe(422);
    const malformed = await json(
      request("/admin/accounts", {
        method: "POST",
        headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}`, "Content-Type": "application/json" },
        body: "{nope",
      }),
    );
    expect(malformed.status).toBe(400);
    expect(malformed.body.type).toBe("error");
    const account = await newAccount();
    expect(
      (
        await json(
          request(`/admin/accounts/${account.id}/keys`, {
            admin: true,
            method: "POST",
            json: { kind: "admin" },
          }),
        )
      ).status,
    ).toBe(422);
    expect(
      (
        await json(
          request("/admin/accounts/nope/keys", {
            admin: true,
            method: "POST",
            json: { kind: "full" },
          }),
        )
      ).status,
    ).toBe(404);
    expect((await json(request("/admin/accounts/nope/ban", { admin: true, method: "PUT" }))).status).toBe(404);
    expect((await json(request("/admin/ip-bans/not-an-ip!", { admin: true, method: "PUT" }))).status).toBe(422);
    expect((await json(request("/admin/accounts", { admin: true, method: "GET" }))).status).toBe(405);
  });

  it("creates an account that can use the API at once", async () => {
    const res = await json(request("/admin/accounts", { admin: true, method: "POST", json: { name: "Alice" } }));
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      type: "success",
      data: {
        id: expect.any(String),
        name: "Alice",
        full_key: expect.stringMatching(/^fk_/),
        upload_key: expect.stringMatching(/^uk_/),
      },
    });
    expect((await upload(res.body.data.full_key, await fixture("tiny/gif.gif"))).status).toBe(200);
  });
});
