import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { mediaJobDeps } from "../../../src/deps";
import { mediaJobsOf } from "../../../src/storage/media-jobs";
import { database } from "../../../src/storage/db";
import { findUploadInAnyState } from "../../../src/storage/uploads";
import { runMediaJob } from "../../../src/uploads/media-jobs/jobs";
import { recordOf, RECORD_TTL_MS, type ServingRecord } from "../../../src/uploads/serving/record";
import { isolateMemo, recordStore } from "../../../src/uploads/serving/record-store";
import {
  clockedApp,
  DEAD_SERVICE,
  fixture,
  json,
  newAccount,
  startApp,
  uniquePng,
  uploadForm,
  ORIGIN,
  type TestAccount,
  request,
} from "../helpers";

/** The database binding, counting the statements the app prepares (and batches it sends). */
function countingDb() {
  let calls = 0;
  const binding = new Proxy(env.DB, {
    get(target, name) {
      const value = Reflect.get(target, name);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (name === "prepare" || name === "batch" || name === "exec") calls++;
        return value.apply(target, args);
      };
    },
  });
  return { binding, calls: () => calls };
}

const db = countingDb();
const { clock, call } = clockedApp({ DB: db.binding });
const local = (url: string) => url.replace(/^https?:\/\/[^/]+/, "");

async function api(key: string, path: string, init: RequestInit = {}) {
  const res = await call(`/api${path}`, { ...init, key });
  return { status: res.status, body: (await res.json()) as any };
}

const patch = (account: TestAccount, id: string, body: object) =>
  api(account.full, `/${id}`, {
    method: "PATCH",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });

async function read(url: string, init: RequestInit = {}) {
  const res = await call(local(url), init);
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
}

interface Urls {
  id: string;
  src: string;
  path: string;
  thumb: string;
}

/** A plainly served upload whose thumbnail is made, as the API describes it. */
async function plainUpload(
  account: TestAccount,
  fields: Record<string, string> = {},
  bytes?: Uint8Array,
): Promise<Urls> {
  const created = await api(account.full, "", {
    method: "POST",
    body: uploadForm(bytes ?? (await uniquePng(crypto.randomUUID())), fields),
  });
  expect(created.status).toBe(200);
  const { data } = (await api(account.full, `/${created.body.data.id}`)).body;
  expect(data.thumb).toMatch(/\/t\//);
  return data;
}

/** Reads src, path and thumb (which remembers the record) and returns the record this isolate holds. */
async function warm(upload: Urls): Promise<ServingRecord> {
  for (const url of [upload.src, upload.path, upload.thumb]) expect((await read(url)).status, url).toBe(200);
  const record = isolateMemo.get(upload.id);
  expect(record).toBeDefined();
  return record!;
}

/**
 * Another isolate, or another colo, that still holds `record` as it was before a change: put
 * back, freshly dated, into this isolate's memo (`memo`) or only into the colo's cache (`cache`).
 */
async function holdStale(record: ServingRecord, where: "memo" | "cache") {
  const pending: Promise<unknown>[] = [];
  recordStore(isolateMemo, caches.default, (work) => pending.push(work)).remember(
    { ...record, freshUntil: clock.now + RECORD_TTL_MS },
    clock.now,
  );
  await Promise.all(pending);
  if (where === "cache") isolateMemo.delete(record.id);
}

/** `check` passes now, and again with the old record held by this isolate, then only by the colo's cache. */
async function truthDespiteStale(record: ServingRecord, check: () => Promise<void>) {
  await check();
  for (const where of ["memo", "cache"] as const) {
    await holdStale(record, where);
    await check().catch((error) => {
      throw new Error(`with the old record in the ${where}: ${error}`);
    });
  }
}

const expectGone = async (upload: Urls, status = 404) => {
  for (const url of [upload.src, upload.path, upload.thumb]) expect((await read(url)).status, url).toBe(status);
};

let account: TestAccount;
beforeEach(async () => {
  account = await newAccount();
  clock.now = Date.now();
});

describe("a remembered record answers without the database", () => {
  it("src, path and thumb: no D1 query from the isolate's memo, nor from the colo's cache", async () => {
    const upload = await plainUpload(account);
    await warm(upload);
    for (const url of [upload.src, upload.path, upload.thumb]) {
      for (const init of [{}, { method: "HEAD" }, { headers: { Range: "bytes=0-9" } }]) {
        const before = db.calls();
        const res = await read(url, init);
        expect(res.status, `${url} ${JSON.stringify(init)}`).toBeLessThan(300);
        expect(db.calls() - before, `${url} ${JSON.stringify(init)}`).toBe(0);
      }
      isolateMemo.delete(upload.id);
      const before = db.calls();
      expect((await read(url)).status).toBe(200);
      expect(db.calls() - before, `${url} from the colo's cache`).toBe(0);
    }
  });

  it("answers exactly as the database path does", async () => {
    const upload = await plainUpload(account, { visibility: "public", expires_in: "3600" });
    const fromDb = [];
    for (const url of [upload.src, upload.path, upload.thumb]) {
      isolateMemo.delete(upload.id);
      await caches.default.delete(`https://serving-records.invalid/${upload.id}`);
      fromDb.push(await read(url));
    }
    let i = 0;
    for (const url of [upload.src, upload.path, upload.thumb]) {
      const before = db.calls();
      const fromRecord = await read(url);
      expect(db.calls()).toBe(before);
      const expected = fromDb[i++]!;
      expect(fromRecord.bytes).toEqual(expected.bytes);
      const headers = (res: typeof expected) => ({ ...Object.fromEntries(res.headers), "x-request-id": "" });
      expect(headers(fromRecord)).toEqual(headers(expected));
    }
  });

  it("a locked, view-limited or converting upload is never remembered", async () => {
    const locked = await api(account.full, "", {
      method: "POST",
      body: uploadForm(await uniquePng(crypto.randomUUID()), { password: "pw" }),
    });
    const limited = await api(account.full, "", {
      method: "POST",
      body: uploadForm(await uniquePng(crypto.randomUUID()), { max_views: "5" }),
    });
    for (const { body } of [locked, limited]) {
      await read(body.data.src);
      expect(isolateMemo.get(body.data.id)).toBeUndefined();
    }
  });
});

describe("after the API answers a change, every URL tells the new truth, even where the old record is still held", () => {
  it("delete", async () => {
    const upload = await plainUpload(account);
    const record = await warm(upload);
    expect((await api(account.full, `/${upload.id}`, { method: "DELETE" })).status).toBe(200);
    await truthDespiteStale(record, () => expectGone(upload));
  });

  it("replace", async () => {
    const upload = await plainUpload(account);
    const record = await warm(upload);
    const gif = await fixture("tiny/gif.gif");
    const replaced = await api(account.full, `/${upload.id}/replace`, { method: "POST", body: uploadForm(gif) });
    expect(replaced.status).toBe(200);
    const row = (await findUploadInAnyState(database(env.DB), upload.id))!;
    const current = new Uint8Array(await (await env.FILES.get(row.objectKey))!.arrayBuffer());
    await truthDespiteStale(record, async () => {
      const src = await read(upload.src);
      expect(src.status).toBe(200);
      expect(src.headers.get("Content-Type")).toBe("image/gif");
      expect(src.bytes).toEqual(current);
      const path = await read(upload.path);
      expect(path.status).toBe(302);
      expect(path.headers.get("Location")).toBe(upload.src);
      expect((await read(upload.thumb)).status).not.toBe(200);
    });
  });

  it("PATCH visibility: the files move, robots follow", async () => {
    const upload = await plainUpload(account);
    const record = await warm(upload);
    expect((await read(upload.src)).headers.get("X-Robots-Tag")).toBe("noindex");
    const changed = await patch(account, upload.id, { visibility: "public" });
    expect(changed.status).toBe(200);
    const now = changed.body.data as Urls;
    expect(now.path).not.toBe(upload.path);
    expect(now.thumb).not.toBe(upload.thumb);
    await truthDespiteStale(record, async () => {
      for (const url of [now.src, now.path, now.thumb]) {
        const res = await read(url);
        expect(res.status, url).toBe(200);
        expect(res.headers.get("X-Robots-Tag"), url).toBeNull();
      }
      expect((await read(upload.path)).headers.get("Location")).toBe(upload.src);
      expect((await read(upload.thumb)).status).toBe(404);
    });
    // Only the moved files are stored: the originals went before the answer.
    const row = (await findUploadInAnyState(database(env.DB), upload.id))!;
    const stored = (await env.FILES.list({ prefix: `uploads/${upload.id}/` })).objects.map((o) => o.key);
    expect(stored.sort()).toEqual([row.objectKey, row.thumbKey].sort());
    expect(stored).not.toContain(record.objectKey);
  });

  it("PATCH title or description, or a visibility that keeps robots as they are, moves nothing", async () => {
    const upload = await plainUpload(account);
    await warm(upload);
    for (const change of [{ title: "a title" }, { description: "words" }, { visibility: "private" }]) {
      const changed = await patch(account, upload.id, change);
      expect(changed.body.data).toMatchObject({ path: upload.path, thumb: upload.thumb });
    }
    const before = db.calls();
    expect((await read(upload.src)).status).toBe(200);
    expect(db.calls()).toBe(before);
  });

  it("PATCH password", async () => {
    const upload = await plainUpload(account);
    const record = await warm(upload);
    const locked = await patch(account, upload.id, { password: "now locked" });
    expect(locked.body.data.locked).toBe(true);
    await truthDespiteStale(record, async () => {
      const src = await read(upload.src);
      expect(src.status).toBe(302);
      expect(src.headers.get("Location")).toBe(`${ORIGIN}/v/${upload.id}`);
      // The old names lead to src, which leads to the page; the current ones need a signed link.
      expect((await read(upload.path)).status).toBe(302);
      expect((await read(locked.body.data.path.split("?")[0])).status).toBe(401);
      expect((await read(upload.thumb)).status).toBe(404);
      expect((await read(locked.body.data.thumb.split("?")[0])).status).toBe(401);
    });
    // Unlocked again: plainly served from its (unmoved) files.
    const open = await patch(account, upload.id, { password: "" });
    expect(open.body.data.path).toBe(locked.body.data.path.split("?")[0]);
    expect((await read(upload.src)).status).toBe(200);
  });

  it("PATCH max_views", async () => {
    const upload = await plainUpload(account);
    const record = await warm(upload);
    const limited = await patch(account, upload.id, { max_views: 2 });
    expect(limited.status).toBe(200);
    await holdStale(record, "memo");
    expect((await read(upload.src)).status).toBe(200);
    await holdStale(record, "cache");
    expect((await read(upload.src)).status).toBe(200);
    await truthDespiteStale(record, async () => {
      expect((await read(upload.src)).status).toBe(410);
      expect((await read(limited.body.data.path)).status).toBe(410);
      expect((await read(upload.path)).headers.get("Location")).toBe(upload.src);
    });
    const row = (await findUploadInAnyState(database(env.DB), upload.id))!;
    expect(row.views).toBe(2);
  });

  it("admin flag", async () => {
    const upload = await plainUpload(account);
    const record = await warm(upload);
    expect(
      (
        await json(
          request(`/admin/uploads/${upload.id}/flag`, {
            admin: true,
            method: "POST",
            json: { reason: "test" },
          }),
        )
      ).status,
    ).toBe(200);
    await truthDespiteStale(record, () => expectGone(upload));
  });

  it("expiry", async () => {
    const upload = await plainUpload(account, { expires_in: "60" });
    const record = await warm(upload);
    expect(record.expiresAt).toBeGreaterThan(clock.now);
    clock.now = record.expiresAt!;
    // The record is still fresh (read within its lifetime) but its upload has expired.
    await truthDespiteStale(record, () => expectGone(upload));
  });

  it("a media job's conversion swap", async () => {
    const bmp = await fixture("generated/photo.bmp");
    // The conversion needs the media service, which is down for the upload itself.
    const started = startApp("/api", {
      method: "POST",
      key: account.full,
      body: uploadForm(bmp),
      app: { bindings: { MEDIA_SERVICE_URL: DEAD_SERVICE } },
    });
    const created = (await (await started.response).json<any>()).data;
    await started.settled();
    const before = (await findUploadInAnyState(database(env.DB), created.id))!;
    expect(before.mime).toBe("image/bmp");
    // A record of the file before its conversion, as an isolate that served it would hold.
    const record = recordOf(before, clock.now);
    await holdStale(record, "memo");
    expect((await read(created.src)).headers.get("Content-Type")).toBe("image/bmp");

    const [job] = await mediaJobsOf(database(env.DB), [created.id]);
    await runMediaJob(
      mediaJobDeps(env, undefined, () => Date.now() + 10 * 60_000),
      job!.id,
    );
    const after = (await findUploadInAnyState(database(env.DB), created.id))!;
    expect(after.mime).toBe("image/webp");
    await truthDespiteStale(record, async () => {
      const src = await read(created.src);
      expect(src.status).toBe(200);
      expect(src.headers.get("Content-Type")).toBe("image/webp");
      expect(src.headers.get("ETag")).toBe(after.etag);
      expect((await read(created.path)).status).toBe(302);
    });
  });
});

/** Reads `url` four at a time until `stop()`, giving the change a turn between rounds (bounded, so a stuck change fails the test). */
async function readUntil(stop: () => boolean, url: string, seen: Awaited<ReturnType<typeof read>>[]) {
  for (let round = 0; !stop() && round < 500; round++) {
    seen.push(...(await Promise.all(Array.from({ length: 4 }, () => read(url)))));
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe("reads during a change", () => {
  it("replace: every answer is the old file or the new one, whole, with its own headers", async () => {
    const upload = await plainUpload(account);
    await warm(upload);
    const old = await read(upload.src);
    const gif = await fixture("tiny/gif.gif");
    const replacing = startApp(`/api/${upload.id}/replace`, {
      method: "POST",
      key: account.full,
      body: uploadForm(gif),
      app: { now: () => clock.now },
    });
    let done = false;
    const answered = replacing.response.then(async (res) => {
      done = true;
      return res.status;
    });
    const seen: Awaited<ReturnType<typeof read>>[] = [];
    await readUntil(() => done, upload.src, seen);
    expect(await answered).toBe(200);
    await replacing.settled();
    seen.push(await read(upload.src));
    const row = (await findUploadInAnyState(database(env.DB), upload.id))!;
    const now = new Uint8Array(await (await env.FILES.get(row.objectKey))!.arrayBuffer());
    const versions = [
      { bytes: old.bytes, type: "image/png", etag: old.headers.get("ETag") },
      { bytes: now, type: "image/gif", etag: row.etag },
    ];
    for (const res of seen) {
      expect(res.status).toBe(200);
      const version = versions.find((v) => v.type === res.headers.get("Content-Type"));
      expect(version).toBeDefined();
      expect(res.bytes).toEqual(version!.bytes);
      expect(res.headers.get("ETag")).toBe(version!.etag);
      expect(res.headers.get("Content-Length")).toBe(String(version!.bytes.length));
    }
    expect(seen.at(-1)!.headers.get("Content-Type")).toBe("image/gif");
  });

  it("PATCH password: every answer is the file as it was served, or the way to the page", async () => {
    const upload = await plainUpload(account);
    await warm(upload);
    const old = await read(upload.src);
    const locking = startApp(`/api/${upload.id}`, {
      method: "PATCH",
      key: account.full,
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ password: "locked now" }),
      app: { now: () => clock.now },
    });
    let done = false;
    const answered = locking.response.then((res) => {
      done = true;
      return res.status;
    });
    const seen: Awaited<ReturnType<typeof read>>[] = [];
    await readUntil(() => done, upload.src, seen);
    expect(await answered).toBe(200);
    seen.push(await read(upload.src));
    for (const res of seen) {
      if (res.status === 200) {
        expect(res.bytes).toEqual(old.bytes);
        expect(res.headers.get("Cache-Control")).toBe(old.headers.get("Cache-Control"));
      } else {
        expect(res.status).toBe(302);
        expect(res.headers.get("Cache-Control")).toBe("private, no-store");
      }
    }
    expect(seen.at(-1)!.status).toBe(302);
  });
});
