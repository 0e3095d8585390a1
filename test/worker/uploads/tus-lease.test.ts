import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { database } from "../../../src/storage/db";
import { storesOf } from "../../../src/deps";
import { fenceHolds } from "../../../src/storage/tus-uploads";
import { storePiece } from "../../../src/uploads/intake/piece-sessions";
import { lostLease } from "../../../src/uploads/intake/tus/refusals";
import { WRITER_LEASE_MS } from "../../../src/uploads/intake/tus/writer-lease";
import { PIECE_BYTES } from "../../../src/model/spec-limits";
import { bigPng, type Call, newAccount, request, startApp, uniquePng } from "../helpers";

/**
 * A tus writer that lost its lease (it stalled past it, and another request took over) changes
 * nothing: not the offset, not the bytes another writer stored, not the file made at the end.
 * The clock is the app's own, moved past the lease instead of waiting 20 s.
 */

const TUS = { "Tus-Resumable": "1.0.0" };

async function digest(bytes: Uint8Array) {
  return btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))));
}

/** The app on a clock the test moves; requests either answered at once or started and answered later. */
function clocked() {
  const clock = { now: Date.now() };
  const app = { now: () => clock.now };
  const call = (path: string, init: Call) => request(path, { ...init, app });
  const start = (path: string, init: Call) => startApp(path, { ...init, app });
  return { clock, call, start };
}

const writeHeaders = (offset: number, length: number, extra: Record<string, string> = {}) => ({
  ...TUS,
  "Content-Type": "application/offset+octet-stream",
  "Upload-Offset": String(offset),
  // The app called directly sees no length the runtime would add.
  "Content-Length": String(length),
  ...extra,
});

/** Until the upload's writer lease is held (by the request started before). */
async function leaseTaken(id: string) {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 10))) {
    const row = await env.DB.prepare("SELECT writer FROM tus_uploads WHERE id = ?")
      .bind(id)
      .first<{ writer: string }>();
    if (row?.writer) return;
  }
  throw new Error("the first request never took the writer's lease");
}

describe("tus: a writer that lost its lease changes nothing", () => {
  it.each([
    ["checksummed", true],
    ["plain", false],
  ])("%s: the stalled writer gets 423, and the file is the bytes of the writer that took over", async (_, summed) => {
    const { clock, call, start } = clocked();
    const account = await newAccount();
    const file = await uniquePng(`lease-${summed}`);
    const half = Math.floor(file.length / 2);
    const created = await call("/api/tus", {
      method: "POST",
      key: account.full,
      headers: { ...TUS, "Upload-Length": String(file.length), "Upload-Metadata": `allow_duplicate ${btoa("1")}` },
    });
    const path = new URL(created.headers.get("Location")!).pathname;
    const id = path.split("/").pop()!;

    // A: the first half's length declared, other bytes sent, 8 of them, then a stall past its lease.
    const stale = new Uint8Array(half).fill(0x41);
    const { readable, writable } = new IdentityTransformStream();
    const sending = writable.getWriter();
    const a = start(path, {
      method: "PATCH",
      key: account.full,
      headers: writeHeaders(0, half, summed ? { "Upload-Checksum": `sha256 ${await digest(stale)}` } : {}),
      body: readable,
    });
    await sending.write(stale.subarray(0, 8));
    await leaseTaken(id);
    clock.now += WRITER_LEASE_MS + 4_000;

    // B takes over once the lease ran out, and writes the first half.
    const first = file.subarray(0, half);
    const b = await call(path, {
      method: "PATCH",
      key: account.full,
      headers: writeHeaders(0, half, summed ? { "Upload-Checksum": `sha256 ${await digest(first)}` } : {}),
      body: first,
    });
    expect(b.status, await b.clone().text()).toBe(204);
    expect(b.headers.get("Upload-Offset")).toBe(String(half));

    // A wakes up and sends the rest of its bytes: refused, and nothing of it kept.
    await sending.write(stale.subarray(8));
    await sending.close();
    const answer = await a.response;
    await a.settled().catch(() => {});
    expect(answer.status, await answer.clone().text()).toBe(423);
    const state = await call(path, { method: "HEAD", key: account.full, headers: TUS });
    expect(state.headers.get("Upload-Offset")).toBe(String(half));

    // The rest, by whoever comes next: the upload made holds the bytes the writers with the lease sent.
    const rest = file.subarray(half);
    const last = await call(path, {
      method: "PATCH",
      key: account.full,
      headers: writeHeaders(half, rest.length),
      body: rest,
    });
    expect(last.status, await last.clone().text()).toBe(204);
    const uploadId = last.headers.get("X-Upload-Id")!;
    const row = await env.DB.prepare("SELECT object_key FROM uploads WHERE id = ?")
      .bind(uploadId)
      .first<{ object_key: string }>();
    const object = await env.FILES.get(row!.object_key);
    const stored = new Uint8Array(await object!.arrayBuffer());
    // (The PNG's own bytes; what follows its end goes with its metadata.)
    expect(stored).toEqual(file.subarray(0, stored.length));
    expect((await env.FILES.list({ prefix: `chunks/${id}/` })).objects).toEqual([]);
  });

  it("a writer whose lease was taken and let go never takes it back to write from its old offset", async () => {
    const { clock, call, start } = clocked();
    const account = await newAccount();
    const created = await call("/api/tus", {
      method: "POST",
      key: account.full,
      headers: { ...TUS, "Upload-Length": "1000" },
    });
    const path = new URL(created.headers.get("Location")!).pathname;
    const id = path.split("/").pop()!;
    const { readable, writable } = new IdentityTransformStream();
    const sending = writable.getWriter();
    const a = start(path, { method: "PATCH", key: account.full, headers: writeHeaders(0, 300), body: readable });
    await sending.write(new Uint8Array(100).fill(1));
    await leaseTaken(id);
    clock.now += WRITER_LEASE_MS + 4_000;
    const b = await call(path, {
      method: "PATCH",
      key: account.full,
      headers: writeHeaders(0, 200),
      body: new Uint8Array(200).fill(2),
    });
    expect(b.status).toBe(204);
    await sending.write(new Uint8Array(200).fill(1));
    await sending.close();
    const answer = await a.response;
    await a.settled().catch(() => {});
    expect(answer.status).toBe(423);
    const row = await env.DB.prepare("SELECT offset, writer, tail FROM tus_uploads WHERE id = ?")
      .bind(id)
      .first<{ offset: number; writer: string | null; tail: string }>();
    expect(row!.offset).toBe(200);
    expect(row!.writer).toBeNull();
    // The bytes under the offset are B's, whatever A wrote.
    const [fragment] = JSON.parse(row!.tail) as { key: string }[];
    const bytes = new Uint8Array(await (await env.FILES.get(fragment!.key))!.arrayBuffer());
    expect(bytes).toEqual(new Uint8Array(200).fill(2));
  });
});

describe("tus: storage keys and failures", () => {
  it("writes no R2 key twice over an upload, and answers a storage failure with 503 and Retry-After", async () => {
    const account = await newAccount();
    const puts: string[] = [];
    let failNext = false;
    const bucket = new Proxy(env.FILES, {
      get(target, name) {
        const value = Reflect.get(target, name);
        if (typeof value !== "function") return value;
        if (name !== "put") return value.bind(target);
        return (key: string, ...rest: unknown[]) => {
          puts.push(key);
          if (failNext) {
            failNext = false;
            return Promise.reject(new Error("put: Reduce your concurrent request rate for the same object. (10058)"));
          }
          return (value as (...args: unknown[]) => unknown).call(target, key, ...rest);
        };
      },
    });
    const app = { bindings: { FILES: bucket } };
    const file = new Uint8Array(40_000).map((_, i) => i % 251);
    const created = await request("/api/tus", {
      method: "POST",
      key: account.full,
      headers: { ...TUS, "Upload-Length": String(file.length) },
      app,
    });
    const path = new URL(created.headers.get("Location")!).pathname;
    const send = async (offset: number, bytes: Uint8Array) =>
      request(path, {
        method: "PATCH",
        key: account.full,
        headers: writeHeaders(offset, bytes.length, { "Upload-Checksum": `sha256 ${await digest(bytes)}` }),
        body: bytes,
        app,
      });
    // More requests than a piece keeps fragments for: their fragments are joined on the way.
    const size = 1000;
    for (let at = 0; at < 20 * size; at += size) {
      const res = await send(at, file.subarray(at, at + size));
      expect(res.status, await res.clone().text()).toBe(204);
    }
    expect(puts.length).toBeGreaterThanOrEqual(40);
    expect(puts.filter((key, i) => puts.indexOf(key) !== i)).toEqual([]);

    failNext = true;
    const failed = await send(20 * size, file.subarray(20 * size, 21 * size));
    expect(failed.status).toBe(503);
    expect(Number(failed.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect((await failed.json<{ type: string }>()).type).toBe("error");
    const state = await request(path, { method: "HEAD", key: account.full, headers: TUS });
    expect(state.headers.get("Upload-Offset")).toBe(String(20 * size));
    const again = await send(20 * size, file.subarray(20 * size, 21 * size));
    expect(again.status, await again.clone().text()).toBe(204);
  });
});

describe("tus: which failures are storage's", () => {
  it("answers storage's failure with a 503 to resume after, and the code's own fault with a 500", async () => {
    const account = await newAccount();
    let fail: Error | null = null;
    const bucket = new Proxy(env.FILES, {
      get(target, name) {
        const value = Reflect.get(target, name);
        if (typeof value !== "function") return value;
        if (name === "put" && fail) return () => Promise.reject(fail);
        return value.bind(target);
      },
    });
    const app = { bindings: { FILES: bucket } };
    const created = await request("/api/tus", {
      method: "POST",
      key: account.full,
      headers: { ...TUS, "Upload-Length": "5000" },
      app,
    });
    const path = new URL(created.headers.get("Location")!).pathname;
    const send = () =>
      request(path, {
        method: "PATCH",
        key: account.full,
        headers: writeHeaders(0, 100),
        body: new Uint8Array(100),
        app,
      });
    fail = new Error("put: We encountered an internal error. Please try again. (10001)");
    const busy = await send();
    expect(busy.status).toBe(503);
    const said = (await busy.json<{ errors: string }>()).errors;
    expect(said).toContain("HEAD");
    expect(said).not.toContain("nothing of this request was kept");
    fail = new TypeError("Cannot read properties of undefined (reading 'byteLength')");
    const fault = await send();
    expect(fault.status, await fault.clone().text()).toBe(500);
    fail = null;
    expect((await send()).status).toBe(204);
  });
});

describe("tus: the offset covers only stored bytes", () => {
  it("a piece or a fragment whose storing fails leaves the offset where it was", async () => {
    const account = await newAccount();
    let failing = false;
    const refuse = () => Promise.reject(new Error("injected: storage unavailable"));
    const failingUpload = (upload: R2MultipartUpload) =>
      new Proxy(upload, {
        get(target, name) {
          const value = Reflect.get(target, name);
          if (typeof value !== "function") return value;
          return name === "uploadPart" && failing ? refuse : value.bind(target);
        },
      });
    const bucket = new Proxy(env.FILES, {
      get(target, name) {
        const value = Reflect.get(target, name);
        if (typeof value !== "function") return value;
        if (failing && (name === "put" || name === "createMultipartUpload")) return refuse;
        if (name === "resumeMultipartUpload")
          return (...args: [string, string]) => failingUpload(target.resumeMultipartUpload(...args));
        return value.bind(target);
      },
    });
    const app = { bindings: { FILES: bucket } };
    const file = await bigPng(PIECE_BYTES + 300_000, 5);
    const created = await request("/api/tus", {
      method: "POST",
      key: account.full,
      headers: { ...TUS, "Upload-Length": String(file.length) },
      app,
    });
    const path = new URL(created.headers.get("Location")!).pathname;
    const send = (offset: number, bytes: Uint8Array) =>
      request(path, {
        method: "PATCH",
        key: account.full,
        headers: writeHeaders(offset, bytes.length),
        body: bytes,
        app,
      });
    const offset = async () =>
      (await request(path, { method: "HEAD", key: account.full, headers: TUS })).headers.get("Upload-Offset");

    // A fragment.
    failing = true;
    const fragment = await send(0, file.subarray(0, 100));
    expect(fragment.status).toBeGreaterThanOrEqual(500);
    expect(await offset()).toBe("0");
    failing = false;
    expect((await send(0, file.subarray(0, 100))).status).toBe(204);
    // The rest of the first piece, which fills it.
    failing = true;
    const piece = await send(100, file.subarray(100, PIECE_BYTES));
    expect(piece.status).toBeGreaterThanOrEqual(500);
    expect(await offset()).toBe("100");
    failing = false;
    const rest = await send(100, file.subarray(100));
    expect(rest.status, await rest.clone().text()).toBe(204);
    const uploadId = rest.headers.get("X-Upload-Id")!;
    const row = await env.DB.prepare("SELECT object_key FROM uploads WHERE id = ?")
      .bind(uploadId)
      .first<{ object_key: string }>();
    const stored = new Uint8Array(await (await env.FILES.get(row!.object_key))!.arrayBuffer());
    expect(stored).toEqual(file.subarray(0, stored.length));
  });
});

describe("tus: a piece is recorded only while the writer's lease holds", () => {
  it("a piece stored by a writer that lost its lease is neither recorded nor kept", async () => {
    const account = await newAccount();
    const created = await request("/api/tus", {
      method: "POST",
      key: account.full,
      headers: { ...TUS, "Upload-Length": String(2 * PIECE_BYTES) },
    });
    const id = new URL(created.headers.get("Location")!).pathname.split("/").pop()!;
    const stores = { ...storesOf(env), db: database(env.DB), now: () => Date.now() };
    // Another request holds the lease now: "stale" is no longer the upload's writer.
    await env.DB.prepare("UPDATE tus_uploads SET writer = 'current', writer_until = ? WHERE id = ?")
      .bind(Date.now() + WRITER_LEASE_MS, id)
      .run();
    // Bytes no type is sniffed from: the piece is stored as an object of its own, not a part.
    const piece = { accountId: account.id, sessionId: id, index: 0, total: 2, bytes: new Uint8Array(PIECE_BYTES) };
    const fence = { writer: "stale", offset: 0 };
    const stored = storePiece(stores, piece, "tus", {
      suffix: fence.writer,
      fence: fenceHolds(id, fence),
      lost: lostLease,
    });
    await expect(stored).rejects.toMatchObject({ status: 423 });
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM chunk_pieces WHERE session_id = ?")
      .bind(id)
      .first<{ n: number }>();
    expect(rows!.n).toBe(0);
    const keys = async () => (await env.FILES.list({ prefix: `chunks/${id}/` })).objects.map((o) => o.key);
    expect(await keys()).toEqual([]);
    // The holder's piece is recorded.
    const current = { suffix: "current", fence: fenceHolds(id, { writer: "current", offset: 0 }), lost: lostLease };
    await storePiece(stores, piece, "tus", current);
    const after = await env.DB.prepare("SELECT count(*) AS n FROM chunk_pieces WHERE session_id = ?")
      .bind(id)
      .first<{ n: number }>();
    expect(after!.n).toBe(1);
    expect(await keys()).toEqual([`chunks/${id}/0.current`]);
  });
});
