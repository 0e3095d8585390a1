import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { MAX_FILE_BYTES, MiB } from "../../../src/model/spec-limits";
import {
  bigPng,
  clockedApp,
  json,
  newAccount,
  request,
  scheduledInline,
  strayObjects,
  type TestAccount,
  uniquePng,
} from "../helpers";
import { b64, head, patch, TUS } from "../tus-requests";

/**
 * The tus 1.0 endpoint, raw: every status the protocol names, the extensions it offers, and the
 * file at the end going through the upload pipeline. (tus-js-client and Uppy, unchanged, run
 * against wrangler dev in test/node/tus-clients.test.ts.)
 */

const metadata = (pairs: Record<string, string>) =>
  Object.entries(pairs)
    .map(([k, v]) => `${k} ${b64(v)}`)
    .join(",");

async function create(key: string, headers: Record<string, string> = {}, body?: Uint8Array) {
  return request("/api/tus", { method: "POST", key, headers: { ...TUS, ...headers }, body });
}

/** A new upload of `length` bytes: its path. */
async function created(account: TestAccount, length: number | null, meta: Record<string, string> = {}) {
  const res = await create(account.full, {
    ...(length === null ? { "Upload-Defer-Length": "1" } : { "Upload-Length": String(length) }),
    ...(Object.keys(meta).length ? { "Upload-Metadata": metadata(meta) } : {}),
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return new URL(res.headers.get("Location")!).pathname;
}

async function digest(algorithm: string, bytes: Uint8Array) {
  const sum = new Uint8Array(await crypto.subtle.digest(algorithm, bytes));
  return btoa(String.fromCharCode(...sum));
}

/** Sends `file` in requests of `size` bytes; the last answer. */
async function sendIn(key: string, path: string, file: Uint8Array, size: number) {
  let last: Response | undefined;
  for (let at = 0; at < file.length; at += size) {
    last = await patch(key, path, at, file.subarray(at, Math.min(at + size, file.length)));
    expect(last.status, await last.clone().text()).toBe(204);
    expect(last.headers.get("Upload-Offset")).toBe(String(Math.min(at + size, file.length)));
  }
  return last!;
}

async function storedFileOf(key: string, id: string) {
  const { body } = await json(request(`/api/${id}`, { key }));
  const row = await env.DB.prepare("SELECT object_key FROM uploads WHERE id = ?")
    .bind(id)
    .first<{ object_key: string }>();
  return { data: body.data, object: await env.FILES.get(row!.object_key) };
}

describe("tus: discovery and version", () => {
  it("OPTIONS says what the server offers, with no key", async () => {
    const res = await request("/api/tus", { method: "OPTIONS" });
    expect(res.status).toBe(204);
    expect(res.headers.get("Tus-Version")).toBe("1.0.0");
    expect(res.headers.get("Tus-Extension")!.split(",").sort()).toEqual(
      ["checksum", "creation", "creation-defer-length", "creation-with-upload", "expiration", "termination"].sort(),
    );
    expect(res.headers.get("Tus-Max-Size")).toBe(String(MAX_FILE_BYTES));
    expect(res.headers.get("Tus-Checksum-Algorithm")).toBe("sha1,sha256");
  });

  it("refuses another Tus-Resumable with 412 and Tus-Version, before the key is looked at", async () => {
    const account = await newAccount();
    for (const version of [undefined, "0.2.2", "2.0.0"]) {
      const res = await request("/api/tus", {
        method: "POST",
        key: account.full,
        headers: { "Upload-Length": "10", ...(version ? { "Tus-Resumable": version } : {}) },
      });
      expect(res.status).toBe(412);
      expect(res.headers.get("Tus-Version")).toBe("1.0.0");
      expect((await res.json<{ type: string }>()).type).toBe("error");
    }
    const res = await request("/api/tus", { method: "POST", headers: { ...TUS, "Upload-Length": "10" } });
    expect(res.status).toBe(401);
    expect(res.headers.get("Tus-Resumable")).toBe("1.0.0");
  });
});

describe("tus: creation", () => {
  it("creates with Location, Upload-Expires and offset 0; HEAD answers it, not to be cached", async () => {
    const account = await newAccount();
    const res = await create(account.upload, { "Upload-Length": "1000", "Upload-Metadata": metadata({ title: "A" }) });
    expect(res.status).toBe(201);
    const location = res.headers.get("Location")!;
    expect(location).toMatch(/^http:\/\/media\.test\/api\/tus\/[0-9a-f]{32}$/);
    expect(Date.parse(res.headers.get("Upload-Expires")!)).toBeGreaterThan(Date.now() + 23 * 3600_000);
    const state = await head(account.upload, new URL(location).pathname);
    expect(state.status).toBe(200);
    expect(state.headers.get("Upload-Offset")).toBe("0");
    expect(state.headers.get("Upload-Length")).toBe("1000");
    expect(state.headers.get("Upload-Metadata")).toBe(metadata({ title: "A" }));
    expect(state.headers.get("Cache-Control")).toContain("no-store");
    expect(state.headers.get("Tus-Resumable")).toBe("1.0.0");
  });

  it.each([
    [{}, 400],
    [{ "Upload-Length": "10", "Upload-Defer-Length": "1" }, 400],
    [{ "Upload-Defer-Length": "2" }, 400],
    [{ "Upload-Length": "-1" }, 400],
    [{ "Upload-Length": "ten" }, 400],
    [{ "Upload-Length": "0" }, 422],
    [{ "Upload-Length": String(MAX_FILE_BYTES + 1) }, 413],
    [{ "Upload-Length": "10", "Upload-Metadata": "title" + " !!!" }, 400],
    [{ "Upload-Length": "10", "Upload-Metadata": `title ${b64("a")},title ${b64("b")}` }, 400],
    [{ "Upload-Length": "10", "Upload-Metadata": `title ${btoa("\xff\xfe")}` }, 400],
    [{ "Upload-Length": "10", "Upload-Metadata": metadata({ visibility: "everyone" }) }, 422],
    [{ "Upload-Length": "10", "Upload-Metadata": metadata({ expires_in: "5" }) }, 422],
    [{ "Upload-Length": "10", "Upload-Metadata": metadata({ max_views: "0" }) }, 422],
    [{ "Upload-Length": "10", "Upload-Metadata": metadata({ title: "x".repeat(300) }) }, 422],
    [{ "Upload-Length": "10", "Upload-Metadata": `a ${"A".repeat(20_000)}` }, 400],
  ])("refuses %o with %i, in the envelope, making nothing", async (headers, status) => {
    const account = await newAccount();
    const res = await create(account.full, headers as Record<string, string>);
    expect(res.status).toBe(status);
    expect((await res.json<{ type: string }>()).type).toBe("error");
    expect(res.headers.get("Location")).toBeNull();
  });

  it("takes a file in the creation request (creation-with-upload) and makes the upload at once", async () => {
    const account = await newAccount();
    const file = await uniquePng("with-upload");
    const res = await create(
      account.full,
      {
        "Upload-Length": String(file.length),
        "Content-Type": "application/offset+octet-stream",
        "Upload-Metadata": metadata({ title: "Made at creation", visibility: "public", filename: "a.png" }),
      },
      file,
    );
    expect(res.status).toBe(201);
    expect(res.headers.get("Upload-Offset")).toBe(String(file.length));
    const id = res.headers.get("X-Upload-Id")!;
    expect(res.headers.get("X-Upload-Src")).toMatch(/^http:\/\/media\.test\/i\/\w+$/);
    const { data, object } = await storedFileOf(account.full, id);
    expect(data.title).toBe("Made at creation");
    expect(data.visibility).toBe("public");
    expect(data.src).toBe(res.headers.get("X-Upload-Src"));
    // The bytes after the PNG's end go with its metadata.
    expect(new Uint8Array(await object!.arrayBuffer())).toEqual(file.subarray(0, object!.size));
    // GET on the tus URL answers the upload, as GET /api/{id} does.
    const result = await json(
      request(new URL(res.headers.get("Location")!).pathname, { key: account.full, headers: TUS }),
    );
    expect(result.status).toBe(200);
    expect(result.body.data.id).toBe(id);
  });
});

describe("tus: writing", () => {
  it("puts a file together from requests of any size, across pieces, byte for byte", async () => {
    const account = await newAccount();
    const file = await bigPng(11 * MiB + 12345, 7);
    const path = await created(account, file.length, { title: "Odd sizes" });
    const last = await sendIn(account.upload, path, file, 3 * MiB + 17);
    const id = last.headers.get("X-Upload-Id")!;
    expect(id).toBeTruthy();
    const { data, object } = await storedFileOf(account.full, id);
    expect(data.title).toBe("Odd sizes");
    expect(new Uint8Array(await object!.arrayBuffer())).toEqual(file);
    expect(await strayObjects()).toEqual([]);
    expect((await env.FILES.list({ prefix: `chunks/${path.split("/").pop()}/` })).objects).toEqual([]);
  });

  it("gives the delete link on the answer that finished the upload only, and says when it was a duplicate", async () => {
    const account = await newAccount();
    const file = await uniquePng("delete-link");
    const path = await created(account, file.length);
    const last = await patch(account.upload, path, 0, file);
    expect(last.status, await last.clone().text()).toBe(204);
    const id = last.headers.get("X-Upload-Id")!;
    expect(last.headers.get("X-Upload-Duplicate")).toBe("false");
    const deleteUrl = last.headers.get("X-Upload-Delete-Url")!;
    expect(deleteUrl).toMatch(new RegExp(`^http://media\\.test/d/${id}/\\w+$`));
    // Asked again later, the upload's URL names the upload, not its delete link.
    const state = await head(account.full, path);
    expect(state.headers.get("X-Upload-Id")).toBe(id);
    expect(state.headers.get("X-Upload-Delete-Url")).toBeNull();
    // The same file again is the same upload, which has no delete link to give (as POST /api).
    const again = await patch(account.full, await created(account, file.length), 0, file);
    expect(again.headers.get("X-Upload-Id")).toBe(id);
    expect(again.headers.get("X-Upload-Duplicate")).toBe("true");
    expect(again.headers.get("X-Upload-Delete-Url")).toBeNull();
    // A browser may read them (CORS).
    const exposed = (
      await create(account.full, { "Upload-Length": "1", Origin: "https://elsewhere.example" })
    ).headers.get("Access-Control-Expose-Headers");
    expect(exposed).toMatch(/X-Upload-Delete-Url/i);
    expect(exposed).toMatch(/X-Upload-Duplicate/i);
    expect((await request(new URL(deleteUrl).pathname, { method: "DELETE" })).status).toBe(200);
    expect((await request(`/api/${id}`, { key: account.full })).status).toBe(404);
  });

  it("takes many small requests within a piece, and a length given only at the end", async () => {
    const account = await newAccount();
    const file = await bigPng(600 * 1024, 3);
    const path = await created(account, null);
    const state = await head(account.full, path);
    expect(state.headers.get("Upload-Defer-Length")).toBe("1");
    expect(state.headers.get("Upload-Length")).toBeNull();
    const size = 20 * 1024;
    let at = 0;
    for (; at + size < file.length; at += size) {
      expect((await patch(account.full, path, at, file.subarray(at, at + size))).status).toBe(204);
    }
    const last = await patch(account.full, path, at, file.subarray(at), { "Upload-Length": String(file.length) });
    expect(last.status, await last.clone().text()).toBe(204);
    const { object } = await storedFileOf(account.full, last.headers.get("X-Upload-Id")!);
    expect(new Uint8Array(await object!.arrayBuffer())).toEqual(file);
  });

  it("finishes when a deferred length comes last, in a request with no body", async () => {
    const account = await newAccount();
    const file = await uniquePng("deferred-last");
    const path = await created(account, null);
    expect((await patch(account.full, path, 0, file)).status).toBe(204);
    const last = await request(path, {
      method: "PATCH",
      key: account.full,
      headers: {
        ...TUS,
        "Content-Type": "application/offset+octet-stream",
        "Upload-Offset": String(file.length),
        "Upload-Length": String(file.length),
      },
    });
    expect(last.status, await last.clone().text()).toBe(204);
    expect(last.headers.get("X-Upload-Id")).toBeTruthy();
    // A length below what was received is refused; so is a second, different one.
    const other = await created(account, null);
    expect((await patch(account.full, other, 0, new Uint8Array(100))).status).toBe(204);
    const below = await patch(account.full, other, 100, new Uint8Array(0), { "Upload-Length": "50" });
    expect(below.status).toBe(400);
  });

  it("lets one request write at a time: another gets 423 until the first ends", async () => {
    const account = await newAccount();
    const path = await created(account, 1000);
    const id = path.split("/").pop()!;
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    const send = writable.getWriter();
    const first = patch(account.full, path, 0, readable as unknown as Uint8Array);
    void send.write(new Uint8Array(100));
    // Until the first has taken the writer's lease: a few round trips, longer on a loaded machine.
    for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 10))) {
      const row = await env.DB.prepare("SELECT writer FROM tus_uploads WHERE id = ?")
        .bind(id)
        .first<{ writer: string }>();
      if (row?.writer) break;
      if (Date.now() > deadline) throw new Error("the first request never took the writer's lease");
    }
    const second = await patch(account.full, path, 0, new Uint8Array(10));
    expect(second.status).toBe(423);
    expect((await request(path, { method: "DELETE", key: account.full, headers: TUS })).status).toBe(423);
    await send.close();
    expect((await first).status).toBe(204);
    expect((await head(account.full, path)).headers.get("Upload-Offset")).toBe("100");
  });

  it("reads the bytes in blocks of 64 KiB or more, not in the 4 KiB pieces the runtime hands over", async () => {
    const account = await newAccount();
    const file = await bigPng(6 * MiB + 4321, 11);
    const path = await created(account, file.length);
    // The body as the runtime hands a request's over: 4 KiB at a time.
    const { readable, writable } = new IdentityTransformStream();
    const writer = writable.getWriter();
    const writing = (async () => {
      for (let at = 0; at < file.length; at += 4096) await writer.write(file.subarray(at, at + 4096));
      await writer.close();
    })();
    const reads = vi.spyOn(ReadableStreamBYOBReader.prototype, "readAtLeast");
    try {
      const res = await patch(account.full, path, 0, readable as unknown as Uint8Array);
      await writing;
      expect(res.status, await res.clone().text()).toBe(204);
      expect(res.headers.get("X-Upload-Id")).toBeTruthy();
      // Each read waits for 64 KiB: about 100 reads for the file, where 4 KiB pieces took 1,600.
      expect(reads.mock.calls.length).toBeGreaterThan(0);
      expect(reads.mock.calls.length).toBeLessThanOrEqual(Math.ceil(file.length / (64 * 1024)) + 1);
    } finally {
      reads.mockRestore();
    }
  });

  it("answers 409 to a wrong Upload-Offset, 415 to a wrong Content-Type, 400 without Upload-Offset", async () => {
    const account = await newAccount();
    const path = await created(account, 1000);
    expect((await patch(account.full, path, 0, new Uint8Array(100))).status).toBe(204);
    const conflict = await patch(account.full, path, 50, new Uint8Array(100));
    expect(conflict.status).toBe(409);
    expect(conflict.headers.get("Upload-Offset")).toBe("100");
    const wrongType = await patch(account.full, path, 100, new Uint8Array(10), { "Content-Type": "image/png" });
    expect(wrongType.status).toBe(415);
    const noOffset = await request(path, {
      method: "PATCH",
      key: account.full,
      headers: { ...TUS, "Content-Type": "application/offset+octet-stream" },
      body: new Uint8Array(10),
    });
    expect(noOffset.status).toBe(400);
    expect((await head(account.full, path)).headers.get("Upload-Offset")).toBe("100");
  });

  it("answers 413 to bytes past Upload-Length, keeping what fit", async () => {
    const account = await newAccount();
    const path = await created(account, 1000);
    const res = await patch(account.full, path, 0, new Uint8Array(1001));
    expect(res.status).toBe(413);
    expect((await res.json<{ type: string }>()).type).toBe("error");
    expect((await head(account.full, path)).headers.get("Upload-Offset")).toBe("0");
  });

  it("checks sha1 and sha256 checksums: a mismatch is 460 and keeps nothing of the request", async () => {
    const account = await newAccount();
    const file = await uniquePng("checksums");
    const path = await created(account, file.length);
    const half = Math.floor(file.length / 2);
    const first = file.subarray(0, half);
    const bad = await patch(account.full, path, 0, first, {
      "Upload-Checksum": `sha1 ${await digest("SHA-1", new Uint8Array(5))}`,
    });
    expect(bad.status).toBe(460);
    expect((await head(account.full, path)).headers.get("Upload-Offset")).toBe("0");
    const good = await patch(account.full, path, 0, first, {
      "Upload-Checksum": `sha1 ${await digest("SHA-1", first)}`,
    });
    expect(good.status).toBe(204);
    const rest = file.subarray(half);
    const last = await patch(account.full, path, half, rest, {
      "Upload-Checksum": `sha256 ${await digest("SHA-256", rest)}`,
    });
    expect(last.status).toBe(204);
    expect(last.headers.get("X-Upload-Id")).toBeTruthy();
    for (const checksum of ["md5 AAAA", "sha1", "sha1 !!!", `sha1 ${btoa("short")}`]) {
      const path2 = await created(account, 10);
      const res = await patch(account.full, path2, 0, new Uint8Array(10), { "Upload-Checksum": checksum });
      expect(res.status, checksum).toBe(400);
    }
  });

  it("honours X-HTTP-Method-Override for PATCH, HEAD and DELETE", async () => {
    const account = await newAccount();
    const path = await created(account, 100);
    const written = await request(path, {
      method: "POST",
      key: account.full,
      headers: {
        ...TUS,
        "X-HTTP-Method-Override": "PATCH",
        "Content-Type": "application/offset+octet-stream",
        "Upload-Offset": "0",
      },
      body: new Uint8Array(40),
    });
    expect(written.status).toBe(204);
    const state = await request(path, {
      method: "POST",
      key: account.full,
      headers: { ...TUS, "X-HTTP-Method-Override": "HEAD" },
    });
    expect(state.headers.get("Upload-Offset")).toBe("40");
    const gone = await request(path, {
      method: "POST",
      key: account.full,
      headers: { ...TUS, "X-HTTP-Method-Override": "DELETE" },
    });
    expect(gone.status).toBe(204);
    expect((await head(account.full, path)).status).toBe(404);
  });

  it("refuses a file the pipeline refuses, and gives that refusal again", async () => {
    const account = await newAccount();
    const text = new TextEncoder().encode("not an image at all, just text ".repeat(10));
    const path = await created(account, text.length);
    const res = await patch(account.full, path, 0, text);
    expect(res.status).toBe(422);
    expect((await res.json<{ type: string }>()).type).toBe("error");
    expect((await head(account.full, path)).status).toBe(422);
    expect(await strayObjects()).toEqual([]);
    expect((await env.FILES.list({ prefix: `chunks/${path.split("/").pop()}/` })).objects).toEqual([]);
  });
});

describe("tus: termination, expiry and access", () => {
  it("terminates: the bytes go and the URL answers 404", async () => {
    const account = await newAccount();
    const path = await created(account, 6 * MiB);
    expect((await patch(account.full, path, 0, await bigPng(5 * MiB + 100))).status).toBe(204);
    const res = await request(path, { method: "DELETE", key: account.full, headers: TUS });
    expect(res.status).toBe(204);
    expect((await head(account.full, path)).status).toBe(404);
    expect((await patch(account.full, path, 0, new Uint8Array(1))).status).toBe(404);
    expect((await env.FILES.list({ prefix: `chunks/${path.split("/").pop()}/` })).objects).toEqual([]);
  });

  it("answers 410 once the upload expired, and the cron job's sweep removes its bytes", async () => {
    const account = await newAccount();
    const path = await created(account, 1000);
    expect((await patch(account.full, path, 0, new Uint8Array(500))).status).toBe(204);
    const id = path.split("/").pop()!;
    await env.DB.prepare("UPDATE tus_uploads SET expires_at = ? WHERE id = ?")
      .bind(Date.now() - 1000, id)
      .run();
    await env.DB.prepare("UPDATE chunk_sessions SET expires_at = ? WHERE id = ?")
      .bind(Date.now() - 1000, id)
      .run();
    expect((await head(account.full, path)).status).toBe(410);
    expect((await patch(account.full, path, 500, new Uint8Array(10))).status).toBe(410);
    expect((await env.FILES.list({ prefix: `chunks/${id}/` })).objects.length).toBeGreaterThan(0);
    await scheduledInline(env);
    expect((await env.FILES.list({ prefix: `chunks/${id}/` })).objects).toEqual([]);
    expect((await head(account.full, path)).status).toBe(410);
  });

  it("is the account's own: another account's key gets 404; tus uploads are not /api/chunk sessions", async () => {
    const [owner, other] = [await newAccount(), await newAccount()];
    const path = await created(owner, 100);
    expect((await head(other.full, path)).status).toBe(404);
    expect((await patch(other.full, path, 0, new Uint8Array(10))).status).toBe(404);
    expect((await request(path, { method: "DELETE", key: other.full, headers: TUS })).status).toBe(404);
    const id = path.split("/").pop()!;
    const form = new FormData();
    form.append("upload_id", id);
    form.append("index", "0");
    form.append("total", "1");
    form.append("chunk", new Blob([new Uint8Array(10)]));
    expect((await request("/api/chunk", { method: "POST", key: owner.full, body: form })).status).toBe(422);
    const finish = new FormData();
    finish.append("upload_id", id);
    expect((await request("/api", { method: "POST", key: owner.full, body: finish })).status).toBe(422);
    expect((await head(owner.full, "/api/tus/not-an-id")).status).toBe(404);
  });
});

describe("tus: budgets", () => {
  it("counts creation as an upload, each later request as a piece, and bytes against the daily piece bytes", async () => {
    const app = clockedApp({
      RATE_LIMITS: "on",
      RATE_LIMIT_PER_MINUTE: "2",
      RATE_LIMIT_PIECES_PER_MINUTE: "4",
      RATE_LIMIT_PIECE_BYTES_PER_DAY: "1000",
    });
    const account = await newAccount();
    const call = (path: string, init: Parameters<typeof app.call>[1]) =>
      app.call(path, { ip: "198.51.100.35", key: account.full, ...init });
    const creation = { method: "POST", headers: { ...TUS, "Upload-Length": "5000" } };
    const first = await call("/api/tus", creation);
    expect(first.status).toBe(201);
    expect(first.headers.get("X-RateLimit-Limit")).toBe("2");
    expect((await call("/api/tus", creation)).status).toBe(201);
    expect((await call("/api/tus", creation)).status).toBe(429);
    const path = new URL(first.headers.get("Location")!).pathname;
    const write = (offset: number, bytes: number) =>
      call(path, {
        method: "PATCH",
        headers: { ...TUS, "Content-Type": "application/offset+octet-stream", "Upload-Offset": String(offset) },
        body: new Uint8Array(bytes),
      });
    const written = await write(0, 600);
    expect(written.status).toBe(204);
    expect(written.headers.get("X-RateLimit-Limit")).toBe("4");
    // 600 of 1000 bytes used: 600 more do not fit, and nothing of them is kept.
    const refused = await write(600, 600);
    expect(refused.status).toBe(429);
    expect((await refused.json<{ errors: string }>()).errors).toMatch(/1000 bytes of pieces per day/);
    const state = await call(path, { method: "HEAD", headers: TUS });
    expect(state.headers.get("Upload-Offset")).toBe("600");
    // The fourth request since creation, then none more this minute.
    expect((await call(path, { method: "HEAD", headers: TUS })).status).toBe(200);
    expect((await call(path, { method: "HEAD", headers: TUS })).status).toBe(429);
  });
});
