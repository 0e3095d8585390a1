import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_FILE_BYTES, MiB } from "../../../src/model/spec-limits";
import { type Call, newAccount, request, type TestAccount } from "../helpers";

/**
 * A tus upload is admitted as every other way in is (ban, quota, byte budgets, the file's cap),
 * before any of its bytes is stored; and what it stores of its options keeps no password.
 */

const TUS = { "Tus-Resumable": "1.0.0" };
const OFFSET_TYPE = "application/offset+octet-stream";
const b64 = (text: string) => btoa(text);

async function created(key: string, headers: Record<string, string>) {
  const res = await request("/api/tus", { method: "POST", key, headers: { ...TUS, ...headers } });
  expect(res.status, await res.clone().text()).toBe(201);
  return new URL(res.headers.get("Location")!).pathname;
}

const patch = (key: string, path: string, offset: number, body: BodyInit, headers: Record<string, string> = {}) =>
  request(path, {
    method: "PATCH",
    key,
    headers: { ...TUS, "Content-Type": OFFSET_TYPE, "Upload-Offset": String(offset), ...headers },
    body,
  });

const offsetOf = async (key: string, path: string) =>
  (await request(path, { method: "HEAD", key, headers: TUS })).headers.get("Upload-Offset");

const storedUnder = async (path: string) =>
  (await env.FILES.list({ prefix: `chunks/${path.split("/").pop()}/` })).objects.map((o) => o.key);

/**
 * A body that declares `length` bytes and sends `sent` of them, then waits: an answer that comes
 * while it waits was given without reading the body.
 */
function declaredBody(length: number, sent = 1024) {
  const { readable, writable } = new FixedLengthStream(length);
  const writer = writable.getWriter();
  void writer.write(new Uint8Array(sent)).catch(() => {});
  return { body: readable, stop: () => writer.abort().catch(() => {}) };
}

async function digest(algorithm: string, bytes: Uint8Array) {
  return btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest(algorithm, bytes))));
}

const setQuota = (account: TestAccount, quota: Record<string, unknown>) =>
  request(`/admin/accounts/${account.id}`, { method: "PATCH", admin: true, json: quota });

describe("tus: admission", () => {
  it("refuses a banned account (403) at creation and on every write, as /api/chunk does", async () => {
    const account = await newAccount();
    const path = await created(account.full, { "Upload-Length": "100" });
    expect((await request(`/admin/accounts/${account.id}/ban`, { method: "PUT", admin: true })).status).toBe(200);
    const refused = await request("/api/tus", {
      method: "POST",
      key: account.upload,
      headers: { ...TUS, "Upload-Length": "100" },
    });
    expect(refused.status).toBe(403);
    expect(refused.headers.get("Location")).toBeNull();
    const write = await patch(account.full, path, 0, new Uint8Array(40));
    expect(write.status).toBe(403);
    expect((await write.json<{ type: string }>()).type).toBe("error");
    expect(await offsetOf(account.full, path)).toBe("0");
    expect(await storedUnder(path)).toEqual([]);
    expect((await request(`/admin/accounts/${account.id}/ban`, { method: "DELETE", admin: true })).status).toBe(200);
    expect((await patch(account.full, path, 0, new Uint8Array(40))).status).toBe(204);
  });

  it("refuses a banned IP address (403) at creation and on every write", async () => {
    const account = await newAccount();
    const ip = "203.0.113.61";
    const path = await created(account.full, { "Upload-Length": "100" });
    expect((await request(`/admin/ip-bans/${ip}`, { method: "PUT", admin: true })).status).toBe(200);
    try {
      const refused = await request("/api/tus", {
        method: "POST",
        key: account.full,
        ip,
        headers: { ...TUS, "Upload-Length": "100" },
      });
      expect(refused.status).toBe(403);
      const write = await request(path, {
        method: "PATCH",
        key: account.full,
        ip,
        headers: { ...TUS, "Content-Type": OFFSET_TYPE, "Upload-Offset": "0" },
        body: new Uint8Array(40),
      });
      expect(write.status).toBe(403);
      expect(await offsetOf(account.full, path)).toBe("0");
    } finally {
      await request(`/admin/ip-bans/${ip}`, { method: "DELETE", admin: true });
    }
    expect((await patch(account.full, path, 0, new Uint8Array(40))).status).toBe(204);
  });

  it("holds a deferred length upload to the account's byte quota before storing its bytes", async () => {
    const account = await newAccount();
    expect((await setQuota(account, { quota_bytes: 1000 })).status).toBe(200);
    const path = await created(account.full, { "Upload-Defer-Length": "1" });
    const res = await patch(account.full, path, 0, new Uint8Array(4 * MiB));
    expect(res.status).toBe(413);
    expect((await res.json<{ errors: string }>()).errors).toMatch(/quota/i);
    expect(await offsetOf(account.full, path)).toBe("0");
    expect(await storedUnder(path)).toEqual([]);
    // A length over the quota, given late, is refused as one given at creation is.
    const late = await patch(account.full, path, 0, new Uint8Array(0), { "Upload-Length": "5000" });
    expect(late.status).toBe(413);
    // What fits still goes.
    expect((await patch(account.full, path, 0, new Uint8Array(600))).status).toBe(204);
    // The upload quota is checked at creation whatever the length says.
    expect((await setQuota(account, { quota_uploads: 0 })).status).toBe(200);
    const none = await request("/api/tus", {
      method: "POST",
      key: account.full,
      headers: { ...TUS, "Upload-Defer-Length": "1" },
    });
    expect(none.status).toBe(413);
  });

  it("counts the account's open tus uploads against its byte quota: 20 of them cannot park 20 times its room", async () => {
    const account = await newAccount();
    expect((await setQuota(account, { quota_bytes: 1000 })).status).toBe(200);
    const first = await created(account.full, { "Upload-Defer-Length": "1" });
    expect((await patch(account.full, first, 0, new Uint8Array(600))).status).toBe(204);
    const second = await created(account.full, { "Upload-Defer-Length": "1" });
    const over = await patch(account.full, second, 0, new Uint8Array(600));
    expect(over.status).toBe(413);
    expect((await over.json<{ errors: string }>()).errors).toMatch(/quota/i);
    expect(await offsetOf(account.full, second)).toBe("0");
    // A length that fits the quota but not beside what the open uploads hold is refused at creation.
    const declared = await request("/api/tus", {
      method: "POST",
      key: account.full,
      headers: { ...TUS, "Upload-Length": "600" },
    });
    expect(declared.status).toBe(413);
    // What is left of the room still goes.
    expect((await patch(account.full, second, 0, new Uint8Array(400))).status).toBe(204);
  });

  it("counts the 20 open uploads and adds one in one statement: concurrent creations never pass it", async () => {
    const account = await newAccount();
    const answers = await Promise.all(
      Array.from({ length: 30 }, () =>
        request("/api/tus", { method: "POST", key: account.full, headers: { ...TUS, "Upload-Length": "10" } }),
      ),
    );
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
    const { n } = (await env.DB.prepare("SELECT count(*) AS n FROM tus_uploads WHERE account_id = ?")
      .bind(account.id)
      .first<{ n: number }>())!;
    expect(n).toBe(20);
    expect((await answers.find((r) => r.status === 429)!.json<{ type: string }>()).type).toBe("error");
  });

  it("refuses a checksummed request past the largest file with 413 before reading it", async () => {
    const account = await newAccount();
    const path = await created(account.full, { "Upload-Defer-Length": "1" });
    const { body, stop } = declaredBody(MAX_FILE_BYTES + 30 * MiB);
    try {
      const res = await patch(account.full, path, 0, body, {
        "Upload-Checksum": `sha1 ${await digest("SHA-1", new Uint8Array(1))}`,
      });
      expect(res.status).toBe(413);
      expect((await res.json<{ type: string }>()).type).toBe("error");
    } finally {
      await stop();
    }
    expect(await storedUnder(path)).toEqual([]);
    expect((await patch(account.full, path, 0, new Uint8Array(100))).status).toBe(204);
  });

  it("charges a checksummed request's bytes to the daily piece bytes before storing them, a mismatch too", async () => {
    const account = await newAccount();
    const puts: string[] = [];
    const bucket = new Proxy(env.FILES, {
      get(target, name) {
        const value = Reflect.get(target, name);
        if (name !== "put" || typeof value !== "function")
          return typeof value === "function" ? value.bind(target) : value;
        return (key: string, ...rest: unknown[]) => {
          puts.push(key);
          return (value as (...args: unknown[]) => unknown).call(target, key, ...rest);
        };
      },
    });
    const bindings = { RATE_LIMITS: "on", RATE_LIMIT_PIECE_BYTES_PER_DAY: "1000", FILES: bucket };
    const call = (path: string, init: Call) =>
      request(path, { ip: "198.51.100.77", key: account.full, ...init, app: { bindings } });
    const createdRes = await call("/api/tus", { method: "POST", headers: { ...TUS, "Upload-Length": "5000" } });
    const path = new URL(createdRes.headers.get("Location")!).pathname;
    const write = async (offset: number, bytes: Uint8Array, sum: Uint8Array) =>
      call(path, {
        method: "PATCH",
        headers: {
          ...TUS,
          "Content-Type": OFFSET_TYPE,
          "Upload-Offset": String(offset),
          "Upload-Checksum": `sha256 ${await digest("SHA-256", sum)}`,
          // The app called directly sees no length the runtime would add.
          "Content-Length": String(bytes.length),
        },
        body: bytes,
      });
    // Too many bytes for the day: refused before any of them is stored.
    const over = await write(0, new Uint8Array(1500).fill(1), new Uint8Array(1500).fill(1));
    expect(over.status, await over.clone().text()).toBe(429);
    expect(puts).toEqual([]);
    // A mismatch counts what it sent: 600 of the 1000 bytes are gone.
    const mismatch = await write(0, new Uint8Array(600).fill(2), new Uint8Array(1));
    expect(mismatch.status).toBe(460);
    const after = await write(0, new Uint8Array(600).fill(3), new Uint8Array(600).fill(3));
    expect(after.status).toBe(429);
    expect(await offsetOf(account.full, path)).toBe("0");
    const fits = await write(0, new Uint8Array(300).fill(4), new Uint8Array(300).fill(4));
    expect(fits.status).toBe(204);
  });

  it("keeps a checksummed request's bytes charged when its body stops short of its Content-Length", async () => {
    const account = await newAccount();
    const bindings = { RATE_LIMITS: "on", RATE_LIMIT_PIECE_BYTES_PER_DAY: "1000" };
    const call = (path: string, init: Call) =>
      request(path, { ip: "198.51.100.78", key: account.full, ...init, app: { bindings } });
    const createdRes = await call("/api/tus", { method: "POST", headers: { ...TUS, "Upload-Length": "5000" } });
    const path = new URL(createdRes.headers.get("Location")!).pathname;
    const write = async (bytes: Uint8Array, declared = bytes.length) =>
      call(path, {
        method: "PATCH",
        headers: {
          ...TUS,
          "Content-Type": OFFSET_TYPE,
          "Upload-Offset": "0",
          "Upload-Checksum": `sha256 ${await digest("SHA-256", new Uint8Array(declared).fill(5))}`,
          "Content-Length": String(declared),
        },
        body: bytes,
      });
    // 600 bytes declared, 599 sent: the body ended short, and its bytes stay counted.
    const short = await write(new Uint8Array(599).fill(5), 600);
    expect(short.status, await short.clone().text()).toBe(400);
    expect(await offsetOf(account.full, path)).toBe("0");
    const again = await write(new Uint8Array(600).fill(5));
    expect(again.status, await again.clone().text()).toBe(429);
    expect((await write(new Uint8Array(300).fill(5))).status).toBe(204);
  });

  it("keeps no password of Upload-Metadata: stored hashed only, never answered on HEAD", async () => {
    const account = await newAccount();
    const meta = `title ${b64("Locked")},password ${b64("hunter2-secret")},filename ${b64("a.png")}`;
    const path = await created(account.full, { "Upload-Length": "100", "Upload-Metadata": meta });
    const state = await request(path, { method: "HEAD", key: account.full, headers: TUS });
    const answered = state.headers.get("Upload-Metadata")!;
    expect(answered).toBe(`title ${b64("Locked")},filename ${b64("a.png")}`);
    const row = await env.DB.prepare("SELECT metadata, fields FROM tus_uploads WHERE id = ?")
      .bind(path.split("/").pop())
      .first<{ metadata: string; fields: string }>();
    for (const stored of [row!.metadata, row!.fields]) {
      expect(stored).not.toContain(b64("hunter2-secret"));
      expect(stored).not.toContain("hunter2-secret");
    }
    expect(JSON.parse(row!.fields).passwordHash).toBeTruthy();
  });
});

describe("tus: the edge's limit on a request's body", () => {
  it("answers a declared body over 100 MB with 413 before reading it, as the edge does when deployed", async () => {
    const account = await newAccount();
    const path = await created(account.full, { "Upload-Length": String(150 * MiB) });
    const { body, stop } = declaredBody(150 * MiB);
    try {
      const res = await patch(account.full, path, 0, body);
      expect(res.status).toBe(413);
      expect((await res.json<{ errors: string }>()).errors).toMatch(/100 ?MB/);
    } finally {
      await stop();
    }
    const creation = declaredBody(150 * MiB);
    try {
      const res = await request("/api/tus", {
        method: "POST",
        key: account.full,
        headers: { ...TUS, "Upload-Length": String(150 * MiB), "Content-Type": OFFSET_TYPE },
        body: creation.body,
      });
      expect(res.status).toBe(413);
    } finally {
      await creation.stop();
    }
    expect(await offsetOf(account.full, path)).toBe("0");
    expect((await patch(account.full, path, 0, new Uint8Array(1000))).status).toBe(204);
  });
});
