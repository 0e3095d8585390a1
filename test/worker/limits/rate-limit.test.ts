import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { hashKey } from "../../../src/accounts/keys";
import { pieceKey } from "../../../src/storage/keys";
import { type Call, clockedApp, newAccount, ownNetwork, uniquePng, uploadForm } from "../helpers";

/** The spec's limits, small where a test would otherwise need hundreds of requests. */
const SPEC_LIMITS = {
  RATE_LIMITS: "on",
  RATE_LIMIT_PER_MINUTE: "20",
  RATE_LIMIT_FULL_KEY_PER_DAY: "500",
  RATE_LIMIT_UPLOAD_KEY_PER_DAY: "2000",
  RATE_LIMIT_IP_PER_DAY: "2000",
  RATE_LIMIT_PIECES_PER_MINUTE: "300",
  RATE_LIMIT_PIECE_BYTES_PER_DAY: "4294967296",
  RATE_LIMIT_IP_PIECE_BYTES_PER_DAY: "8589934592",
  RATE_LIMIT_BAD_KEY_PER_MINUTE: "10",
};

/**
 * An IPv4 address (its own network) that no other file sends from: drawn at random from the
 * shared address space, 100.64.0.0/10, which no other test uses as a client's. The limiters keep
 * their counts per network in Durable Objects that outlive this file in a shared runtime
 * (SHARED_RUNTIME_TESTS), so the counts these tests check must start from addresses of their own.
 */
function ownAddress() {
  const n = crypto.getRandomValues(new Uint32Array(1))[0]! & 0x3fffff;
  return `100.${64 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;
}

/**
 * An app whose clock the test moves, with the given limits; its requests that name no address
 * come from one of its own, so that no other test's (run before it in any order) count there.
 */
function service(limits: Record<string, string> = {}) {
  const app = clockedApp({ ...SPEC_LIMITS, ...limits });
  const clock = app.clock;
  const address = ownAddress();
  async function call(path: string, { ip, ...init }: Call = {}) {
    const res = await app.call(path, { ip: ip ?? address, ...init });
    return {
      status: res.status,
      body: (await res.json()) as any,
      limit: res.headers.get("X-RateLimit-Limit"),
      remaining: res.headers.get("X-RateLimit-Remaining"),
      retryAfter: res.headers.get("Retry-After"),
    };
  }
  return { clock, call, advance: (seconds: number) => (clock.now += seconds * 1000) };
}

const list = (s: ReturnType<typeof service>, key: string, ip?: string) => s.call("/api", { key, ip });

describe("per key, per minute", () => {
  it("lets exactly 20 through, counts down in the headers, and says when to retry", async () => {
    const s = service();
    const { full } = await newAccount();
    for (let i = 1; i <= 20; i++) {
      const res = await list(s, full);
      expect(res.status).toBe(200);
      expect([res.limit, res.remaining]).toEqual(["20", String(20 - i)]);
    }
    const refused = await list(s, full);
    expect(refused).toMatchObject({ status: 429, limit: "20", remaining: "0", retryAfter: "3" });
    expect(refused.body).toEqual({
      type: "error",
      errors: expect.stringMatching(/^Rate limit exceeded \(20 per minute\)\. Retry in 3 s\.$/),
    });
    // A refused request used nothing: after Retry-After exactly one more gets through.
    for (let i = 0; i < 5; i++) expect((await list(s, full)).status).toBe(429);
    s.advance(2.9);
    expect((await list(s, full)).status).toBe(429);
    s.advance(0.1);
    expect((await list(s, full)).status).toBe(200);
    expect((await list(s, full)).status).toBe(429);
    // A whole minute restores the whole budget.
    s.advance(60);
    expect((await list(s, full)).remaining).toBe("19");
  });

  it("banks no credit while idle: after ten quiet minutes a burst still gets 20 through", async () => {
    const s = service();
    const { full } = await newAccount();
    expect((await list(s, full)).status).toBe(200);
    s.advance(600);
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await list(s, full)).status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(20);
    expect(statuses.slice(20)).toEqual(Array(20).fill(429));
  });

  it("is exact under concurrency: of 40 simultaneous requests, 20 succeed", async () => {
    const s = service();
    const { full } = await newAccount();
    const results = await Promise.all(Array.from({ length: 40 }, () => list(s, full)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(20);
    expect(results.filter((r) => r.status === 429)).toHaveLength(20);
  });

  it("keeps keys independent, and uploads, reads, changes and deletes share one budget", async () => {
    const s = service({ RATE_LIMIT_PER_MINUTE: "4" });
    const a = await newAccount();
    const b = await newAccount();
    const up = await s.call("/api", { method: "POST", key: a.full, body: uploadForm(await uniquePng("shared")) });
    expect(up.status).toBe(200);
    const id = up.body.data.id;
    expect((await s.call(`/api/${id}`, { key: a.full })).status).toBe(200);
    expect(
      (
        await s.call(`/api/${id}`, {
          method: "PATCH",
          key: a.full,
          headers: { "Content-Type": "application/json" },
          body: '{"title":"x"}',
        })
      ).status,
    ).toBe(200);
    expect((await s.call(`/api/${id}`, { method: "DELETE", key: a.full })).status).toBe(200);
    expect((await list(s, a.full)).status).toBe(429);
    expect((await list(s, b.full)).status).toBe(200);
    // The upload-only key of the same account is another key, with its own budget.
    expect(
      (await s.call("/api", { method: "POST", key: a.upload, body: uploadForm(await uniquePng("other")) })).status,
    ).toBe(200);
  });
});

describe("per day", () => {
  it("limits a full key per day, whatever the minutes allow", async () => {
    const s = service({ RATE_LIMIT_PER_MINUTE: "1000", RATE_LIMIT_FULL_KEY_PER_DAY: "30" });
    const { full } = await newAccount();
    for (let i = 0; i < 30; i++) expect((await list(s, full)).status).toBe(200);
    const refused = await list(s, full);
    expect(refused).toMatchObject({ status: 429, limit: "30", remaining: "0", retryAfter: "2880" });
    s.advance(2879);
    expect((await list(s, full)).status).toBe(429);
    s.advance(1);
    expect((await list(s, full)).status).toBe(200);
  });

  it("gives the upload-only key its own, larger, day budget", async () => {
    const s = service({
      RATE_LIMIT_PER_MINUTE: "1000",
      RATE_LIMIT_FULL_KEY_PER_DAY: "3",
      RATE_LIMIT_UPLOAD_KEY_PER_DAY: "6",
    });
    const { upload } = await newAccount();
    const statuses = [];
    for (let i = 0; i < 7; i++)
      statuses.push((await s.call("/api", { method: "POST", key: upload, body: new FormData() })).status);
    // Refused uploads (no file: 422) still count; the seventh is over the day budget.
    expect(statuses).toEqual([422, 422, 422, 422, 422, 422, 429]);
  });

  it("caps an IPv6 client by its /64", async () => {
    const s = service({ RATE_LIMIT_IP_PER_DAY: "3" });
    const { full } = await newAccount();
    const network = ownNetwork();
    for (let i = 1; i <= 3; i++) expect((await list(s, full, `${network}::${i}`)).status).toBe(200);
    expect((await list(s, full, `${network}:1:2:3:4`)).status).toBe(429);
    expect((await list(s, full, `${ownNetwork()}::1`)).status).toBe(200);
  });

  it("caps an IP across all its keys, without using the budgets of the keys it refuses", async () => {
    const s = service({ RATE_LIMIT_IP_PER_DAY: "10" });
    const keys = [(await newAccount()).full, (await newAccount()).full, (await newAccount()).full];
    const statuses = [];
    const ip = ownAddress();
    for (let i = 0; i < 15; i++) statuses.push((await list(s, keys[i % 3]!, ip)).status);
    expect(statuses.filter((x) => x === 200)).toHaveLength(10);
    expect(statuses.slice(10)).toEqual([429, 429, 429, 429, 429]);
    // The same keys from another IP: their minute budgets were not drawn on by the refusals.
    const elsewhere = await list(s, keys[0]!, ownAddress());
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.remaining).toBe("15"); // 20 a minute, 4 used from the first IP, this one
  });

  it("draws on the key and the IP at once, and a key's refusals use none of the IP's budget", async () => {
    const s = service({ RATE_LIMIT_IP_PER_DAY: "30" });
    const [spent, other] = [(await newAccount()).full, (await newAccount()).full];
    const ip = ownAddress();
    const statuses = [];
    for (let i = 0; i < 25; i++) statuses.push((await list(s, spent, ip)).status);
    expect(statuses.filter((x) => x === 200)).toHaveLength(20);
    expect(statuses.slice(20)).toEqual([429, 429, 429, 429, 429]);
    // The IP gave 20 of its 30 to the first key, none to the 5 refusals: 10 left for another key.
    const more = [];
    for (let i = 0; i < 11; i++) more.push((await list(s, other, ip)).status);
    expect(more.slice(0, 10)).toEqual(Array(10).fill(200));
    expect(more[10]).toBe(429);
  });
});

describe("pieces", () => {
  it("have their own budget; only the finishing upload counts toward the others", async () => {
    const s = service({ RATE_LIMIT_PER_MINUTE: "2", RATE_LIMIT_PIECES_PER_MINUTE: "6" });
    const { full } = await newAccount();
    const uploadId = crypto.randomUUID().replaceAll("-", "");
    const png = await uniquePng("pieces");
    const size = Math.ceil(png.length / 6);
    for (let index = 0; index < 6; index++) {
      const form = new FormData();
      form.append("upload_id", uploadId);
      form.append("index", String(index));
      form.append("total", "6");
      form.append("chunk", new Blob([png.subarray(index * size, (index + 1) * size)]));
      const res = await s.call("/api/chunk", { method: "POST", key: full, body: form });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.limit).toBe("6");
    }
    const seventh = await s.call("/api/chunk", { method: "POST", key: full, body: new FormData() });
    expect(seventh).toMatchObject({ status: 429, retryAfter: "10" });
    const finish = new FormData();
    finish.append("upload_id", uploadId);
    const done = await s.call("/api", { method: "POST", key: full, body: finish });
    expect(done.status).toBe(200);
    expect([done.limit, done.remaining]).toEqual(["2", "1"]);
  });
});

describe("bytes of pieces", () => {
  const pieceForm = (uploadId: string, index: number, bytes: number) => {
    const form = new FormData();
    form.append("upload_id", uploadId);
    form.append("index", String(index));
    form.append("total", "100");
    form.append("chunk", new Blob([new Uint8Array(bytes).fill(index + 1)]));
    return form;
  };
  const newUploadId = () => crypto.randomUUID().replaceAll("-", "");
  const send = (
    s: ReturnType<typeof service>,
    key: string,
    uploadId: string,
    index: number,
    bytes: number,
    ip?: string,
  ) => s.call("/api/chunk", { method: "POST", key, ip, body: pieceForm(uploadId, index, bytes) });

  it("are budgeted per key per day by their size, and a refused piece is not stored", async () => {
    const s = service({ RATE_LIMIT_PIECE_BYTES_PER_DAY: "1000" });
    const { upload } = await newAccount();
    const uploadId = newUploadId();
    for (let index = 0; index < 3; index++) expect((await send(s, upload, uploadId, index, 300)).status).toBe(200);
    // 900 of 1000 bytes used: another 300 must wait until 200 bytes are back (a day / 1000 per byte).
    const refused = await send(s, upload, uploadId, 3, 300);
    expect(refused).toMatchObject({ status: 429, retryAfter: "17280" });
    expect(refused.body).toEqual({ type: "error", errors: expect.stringMatching(/1000 bytes of pieces per day/) });
    expect(await env.FILES.head(pieceKey(uploadId, 3))).toBeNull();
    // What is left still fits a smaller piece.
    expect((await send(s, upload, uploadId, 3, 100)).status).toBe(200);
    expect(await send(s, upload, uploadId, 4, 300)).toMatchObject({ status: 429, retryAfter: "25920" });
    // (Hours later: the session has expired by then, so a new one.)
    s.advance(25919);
    expect((await send(s, upload, newUploadId(), 0, 300)).status).toBe(429);
    s.advance(1);
    expect((await send(s, upload, newUploadId(), 0, 300)).status).toBe(200);
  });

  it("are budgeted per IP across keys, without using the budget of a key the IP refuses", async () => {
    const s = service({ RATE_LIMIT_PIECE_BYTES_PER_DAY: "1000", RATE_LIMIT_IP_PIECE_BYTES_PER_DAY: "1500" });
    const a = await newAccount();
    const b = await newAccount();
    const ip = ownAddress();
    expect((await send(s, a.upload, newUploadId(), 0, 800, ip)).status).toBe(200);
    const refused = await send(s, b.upload, newUploadId(), 0, 800, ip);
    expect(refused).toMatchObject({ status: 429 });
    expect(refused.body.errors).toMatch(/1500 bytes of pieces per day/);
    // b's own budget was given back: all 1000 bytes of it from another IP.
    expect((await send(s, b.upload, newUploadId(), 0, 1000, ownAddress())).status).toBe(200);
  });

  it("are not charged for a piece that is refused for another reason", async () => {
    const s = service({ RATE_LIMIT_PIECE_BYTES_PER_DAY: "1000" });
    const owner = await newAccount();
    const other = await newAccount();
    const uploadId = newUploadId();
    expect((await send(s, owner.upload, uploadId, 0, 10)).status).toBe(200);
    // Another account's session: 422, and nothing is charged.
    expect((await send(s, other.upload, uploadId, 1, 1000)).status).toBe(422);
    expect((await send(s, other.upload, newUploadId(), 0, 1000)).status).toBe(200);
  });

  it("default to 4 GiB a day per key and 8 GiB per IP", async () => {
    const { settingsOf } = await import("../../../src/settings");
    const { limits } = settingsOf({} as Cloudflare.Env);
    expect([limits.pieceBytesPerDay, limits.ipPieceBytesPerDay]).toEqual([4 * 2 ** 30, 8 * 2 ** 30]);
  });
});

describe("requests without a valid key", () => {
  it("are throttled per IP, so keys cannot be guessed at speed", async () => {
    const s = service({ RATE_LIMIT_BAD_KEY_PER_MINUTE: "5" });
    const ip = ownAddress();
    for (let i = 0; i < 5; i++) expect((await list(s, `fk_guess${i}`, ip)).status).toBe(401);
    const throttled = await list(s, "fk_guess", ip);
    expect(throttled).toMatchObject({ status: 429, retryAfter: "12" });
    expect((await list(s, "", ip)).status).toBe(429);
    expect((await list(s, "fk_guess", ownAddress())).status).toBe(401);
    // A real key from the throttled IP is not held back.
    expect((await list(s, (await newAccount()).full, ip)).status).toBe(200);
  });

  it("count an IPv6 client by its /64", async () => {
    const s = service({ RATE_LIMIT_BAD_KEY_PER_MINUTE: "5" });
    const network = ownNetwork();
    for (let i = 1; i <= 5; i++) expect((await list(s, `fk_guess${i}`, `${network}:${i}::${i}`)).status).toBe(401);
    expect((await list(s, "fk_guess", `${network}::ffff`)).status).toBe(429);
    expect((await list(s, "fk_guess", `${ownNetwork()}::1`)).status).toBe(401);
  });
});

describe("headers", () => {
  it("are on every API response, errors included", async () => {
    const s = service();
    const { full, upload } = await newAccount();
    for (const res of [
      await list(s, full),
      await s.call("/api/nosuchid", { key: full }),
      await s.call("/api/nosuchid", {
        method: "PATCH",
        key: full,
        headers: { "Content-Type": "application/json" },
        body: "{",
      }),
      await s.call("/api", { method: "POST", key: full, body: new FormData() }),
      await list(s, upload),
      await list(s, "fk_wrong"),
      await s.call("/api", { method: "PUT", key: full }),
    ]) {
      expect(res.limit, JSON.stringify(res.body)).toMatch(/^\d+$/);
      expect(res.remaining).toMatch(/^\d+$/);
    }
  });

  it("are absent, and nothing is limited, when limits are switched off", async () => {
    const s = service({ RATE_LIMITS: "off", RATE_LIMIT_PER_MINUTE: "1" });
    const { full } = await newAccount();
    for (let i = 0; i < 3; i++) expect(await list(s, full)).toMatchObject({ status: 200, limit: null });
  });
});

describe("durability", () => {
  it("keeps counts when the Durable Object restarts", async () => {
    const s = service();
    const { full } = await newAccount();
    for (let i = 0; i < 5; i++) await list(s, full);
    const stub = env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`key:${await hashKey(full)}`));
    await runInDurableObject(stub, (_instance, state) => {
      // What is kept is in SQLite, not in the object.
      expect(state.storage.sql.exec("SELECT count(*) AS n FROM budgets").one().n).toBe(2);
    });
    await runInDurableObject(stub, (_instance, state) => state.abort("restart")).catch(() => {});
    expect((await list(s, full)).remaining).toBe("14");
  });
});
