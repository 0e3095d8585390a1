import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { hashKey } from "../../../src/accounts/keys";
import type { RateLimiter } from "../../../src/limits/rate-limiter";
import { clockedApp, newAccount, uniquePng, uploadForm, request } from "../helpers";

const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

/** The D1 binding, recording the constraint or bookmark each session starts from. */
function recordingDb() {
  const starts: string[] = [];
  const db = new Proxy(env.DB, {
    get(target, property) {
      if (property === "withSession") {
        return (start: string) => {
          starts.push(start);
          return target.withSession(start);
        };
      }
      const value = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db, starts };
}

type Statement = { real: D1PreparedStatement };

/**
 * The D1 binding with read replicas that stop where they are at `freeze()`: from then on, a
 * session that may read a replica (any start but "first-primary") answers a statement on
 * `api_keys` as that statement was answered before, as a replica that has not caught up would.
 * Every statement run is recorded with the start of its session.
 */
function replicatedDb() {
  const ran: { start: string; sql: string }[] = [];
  const before = new Map<string, unknown>();
  let frozen = false;
  const statement = (start: string, sql: string, real: D1PreparedStatement, values: unknown[]) => {
    const run =
      (method: "first" | "all" | "raw" | "run") =>
      async (...args: unknown[]) => {
        ran.push({ start, sql });
        const keys = sql.includes('"api_keys"');
        const asked = JSON.stringify([method, sql, values, args]);
        if (frozen && keys && start !== "first-primary" && before.has(asked)) return before.get(asked);
        const answer = await (real[method] as (...a: unknown[]) => Promise<unknown>)(...args);
        if (!frozen && keys) before.set(asked, answer);
        return answer;
      };
    const wrapped: Statement & Record<string, unknown> = {
      real,
      bind: (...bound: unknown[]) => statement(start, sql, real.bind(...bound), bound),
      first: run("first"),
      all: run("all"),
      raw: run("raw"),
      run: run("run"),
    };
    return wrapped;
  };
  const db = new Proxy(env.DB, {
    get(target, property) {
      if (property === "withSession") {
        return (start: string) => {
          const session = target.withSession(start);
          return {
            prepare: (sql: string) => statement(start, sql, session.prepare(sql), []),
            batch: (statements: Statement[]) => session.batch(statements.map((s) => s.real)),
            getBookmark: () => session.getBookmark(),
          };
        };
      }
      const value = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db, ran, freeze: () => (frozen = true) };
}

async function notedBookmark(fullKey: string) {
  const stub = env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`key:${await hashKey(fullKey)}`));
  return runInDurableObject(stub, (limiter: RateLimiter) => limiter.notedBookmark());
}

describe("D1 read replication", () => {
  it("writes run on the primary and note their bookmark with the account's full key, whichever key wrote", async () => {
    const account = await newAccount();
    const { db, starts } = recordingDb();
    const app = clockedApp({ DB: db });
    const res = await app.call("/api", {
      method: "POST",
      key: account.upload,
      body: uploadForm(await uniquePng("sessions-1")),
    });
    expect(res.status).toBe(200);
    expect(starts).toEqual(["first-primary"]);
    const written = res.headers.get("X-D1-Bookmark");
    expect(written).toMatch(BOOKMARK);
    expect(await notedBookmark(account.full)).toBe(written);
  });

  it("reads start from the account's last write, so a client without the header reads its own writes", async () => {
    const account = await newAccount();
    const { db, starts } = recordingDb();
    const app = clockedApp({ DB: db });
    const uploaded = await app.call("/api", {
      method: "POST",
      key: account.full,
      body: uploadForm(await uniquePng("sessions-2")),
    });
    const { id } = ((await uploaded.json()) as any).data;
    const written = uploaded.headers.get("X-D1-Bookmark")!;
    starts.length = 0;

    const read = await app.call(`/api/${id}`, { key: account.full });
    expect(read.status).toBe(200);
    // The key is looked up on the primary; the request's own queries wait for the account's last write.
    expect(starts).toEqual(["first-primary", written]);
    expect(read.headers.get("X-D1-Bookmark")! >= written).toBe(true);
  });

  it("a later bookmark sent back by the client wins over the noted one", async () => {
    const account = await newAccount();
    const { db, starts } = recordingDb();
    const app = clockedApp({ DB: db });
    await app.call("/api", { method: "POST", key: account.full, body: uploadForm(await uniquePng("sessions-3")) });
    // Another account's write moves the database on.
    const other = await newAccount();
    const later = (
      await app.call("/api", { method: "POST", key: other.full, body: uploadForm(await uniquePng("sessions-4")) })
    ).headers.get("X-D1-Bookmark")!;
    starts.length = 0;
    const res = await app.call("/api", { key: account.full, headers: { "X-D1-Bookmark": later } });
    expect(res.status).toBe(200);
    expect(starts).toEqual(["first-primary", later]);
  });

  it("a read with nothing noted goes to the primary, then notes where it got to for the next ones", async () => {
    const account = await newAccount();
    const { db, starts } = recordingDb();
    const app = clockedApp({ DB: db });
    expect(await notedBookmark(account.full)).toBeNull();
    const res = await app.call("/api?page=1", { key: account.full });
    expect(res.status).toBe(200);
    expect(starts).toEqual(["first-primary", "first-primary"]);
    expect(await notedBookmark(account.full)).toBe(res.headers.get("X-D1-Bookmark"));
  });

  it("never notes a bookmark a client sent, which could hold back every later read", async () => {
    const account = await newAccount();
    const future = `${"f".repeat(8)}-${"f".repeat(8)}-${"f".repeat(8)}-${"f".repeat(32)}`;
    const res = await clockedApp().call("/api", { key: account.full, headers: { "X-D1-Bookmark": future } });
    expect(res.status).toBe(200);
    expect(await notedBookmark(account.full)).toBeNull();
  });

  it("finds a key made a moment ago even when every replica is behind it", async () => {
    const account = await newAccount();
    // A replica behind the key's creation answers "no such key"; the key is looked up on the primary.
    const empty = {
      first: async () => null,
      all: async () => ({ results: [] }),
      raw: async () => [],
      run: async () => ({ results: [] }),
    };
    const lagging = new Proxy(env.DB, {
      get(target, property) {
        if (property === "withSession") {
          return (start: string) => {
            const session = target.withSession(start);
            if (start === "first-primary") return session;
            return new Proxy(session, {
              get: (s, p) =>
                p === "prepare"
                  ? () => ({ bind: () => empty, ...empty })
                  : (Reflect.get(s, p).bind?.(s) ?? Reflect.get(s, p)),
            });
          };
        }
        const value = Reflect.get(target, property);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const res = await clockedApp({ DB: lagging }).call("/api", { key: account.full });
    expect(res.status).toBe(200);
  });

  it("looks the key up on the primary: a regenerated key is refused at once, even by a replica that has not caught up", async () => {
    const account = await newAccount();
    const { db, ran, freeze } = replicatedDb();
    const app = clockedApp({ DB: db });
    const uploaded = await app.call("/api", {
      method: "POST",
      key: account.full,
      body: uploadForm(await uniquePng("sessions-6")),
    });
    const { id } = ((await uploaded.json()) as any).data;
    const written = uploaded.headers.get("X-D1-Bookmark")!;
    ran.length = 0;

    expect((await app.call(`/api/${id}`, { key: account.full })).status).toBe(200);
    const startsOf = (table: string) => [
      ...new Set(ran.filter((r) => r.sql.includes(`from "${table}"`)).map((r) => r.start)),
    ];
    expect(startsOf("api_keys")).toEqual(["first-primary"]);
    // The request's own reads still go wherever the account's last write has reached.
    expect(startsOf("uploads")).toEqual([written]);

    const regenerated = await request(`/admin/accounts/${account.id}/keys`, {
      admin: true,
      method: "POST",
      json: { kind: "full" },
    });
    const { key } = ((await regenerated.json()) as any).data;
    freeze();
    for (const path of ["/api", `/api/${id}`]) {
      expect((await app.call(path, { key: account.full })).status, path).toBe(401);
      expect((await app.call(path, { key })).status, path).toBe(200);
    }
  });

  it("refuses a malformed bookmark with 400 in the error envelope", async () => {
    const account = await newAccount();
    for (const sent of [
      "garbage",
      "00000000-0000000b-00000000",
      `${"0".repeat(8)}-${"0".repeat(8)}-${"0".repeat(8)}-${"0".repeat(31)}g`,
    ]) {
      const res = await clockedApp().call("/api", { key: account.full, headers: { "X-D1-Bookmark": sent } });
      expect(res.status, sent).toBe(400);
      expect(await res.json()).toEqual({ type: "error", errors: expect.stringContaining("X-D1-Bookmark") });
    }
  });

  it("with rate limits off, a client without the header still reads its own writes", async () => {
    const account = await newAccount();
    const { db, starts } = recordingDb();
    const app = clockedApp({ DB: db, RATE_LIMITS: "off" });
    const body = uploadForm(await uniquePng("sessions-5"));
    const uploaded = await app.call("/api", { method: "POST", key: account.upload, body });
    const { id } = ((await uploaded.json()) as any).data;
    const written = uploaded.headers.get("X-D1-Bookmark")!;
    expect(uploaded.headers.get("X-RateLimit-Limit")).toBeNull();
    expect(await notedBookmark(account.full)).toBe(written);
    starts.length = 0;

    const read = await app.call(`/api/${id}`, { key: account.full });
    expect(read.status).toBe(200);
    expect(read.headers.get("X-RateLimit-Limit")).toBeNull();
    expect(starts).toEqual(["first-primary", written]);
  });

  it("lets browsers send and read the bookmark header", async () => {
    const preflight = await clockedApp().call("/api", {
      method: "OPTIONS",
      headers: {
        Origin: "https://app.example",
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "x-api-key, x-d1-bookmark",
      },
    });
    expect(preflight.headers.get("Access-Control-Allow-Headers")?.toLowerCase()).toContain("x-d1-bookmark");
    const account = await newAccount();
    const res = await clockedApp().call("/api", { key: account.full, headers: { Origin: "https://app.example" } });
    expect(res.headers.get("Access-Control-Expose-Headers")?.toLowerCase()).toContain("x-d1-bookmark");
  });
});
