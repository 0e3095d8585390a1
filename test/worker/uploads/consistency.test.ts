import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../../src/app";
import { scheduled } from "../../../src/cron";
import { processDeps, uploadDeps } from "../../../src/deps";
import { mediaJobsOf } from "../../../src/storage/media-jobs";
import { findUploadRecord } from "../../../src/storage/uploads";
import { sweepExpiredUploads } from "../../../src/uploads/expire";
import { runMediaJob } from "../../../src/uploads/process";
import { database } from "../../../src/storage/db";
import { DEAD_SERVICE, fixture, newAccount, ORIGIN, uniquePng, uploadForm, type TestAccount } from "../helpers";

const R2_CALLS = new Set(["put", "get", "head", "delete", "list", "createMultipartUpload"]);

/**
 * Bindings whose `failAt`-th storage operation (a D1 statement prepared, or an R2 call) throws,
 * as a crash at that point would leave things. `steps()` tells how many operations ran.
 */
function failing(failAt: number) {
  let count = 0;
  const tick = () => {
    if (++count === failAt) throw new Error(`injected failure at storage step ${failAt}`);
  };
  const wrap = <T extends object>(target: T, counted: (name: string) => boolean): T =>
    new Proxy(target, {
      get(object, name) {
        const value = Reflect.get(object, name);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (counted(String(name))) tick();
          return value.apply(object, args);
        };
      },
    });
  return {
    bindings: { FILES: wrap(env.FILES, (n) => R2_CALLS.has(n)), DB: wrap(env.DB, (n) => n === "prepare" || n === "batch") } as Partial<Cloudflare.Env>,
    steps: () => count,
  };
}

async function call(path: string, init: RequestInit & { key?: string }, bindings: Partial<Cloudflare.Env> = {}) {
  const { key, ...rest } = init;
  const ctx = createExecutionContext();
  const res = await createApp().fetch(new Request(`${ORIGIN}${path}`, { ...rest, headers: key ? { "X-API-Key": key } : {} }), { ...env, ...bindings }, ctx);
  await waitOnExecutionContext(ctx).catch(() => {});
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}

/** After the cron job's sweeps (past the grace period): the row's files exist, nothing else is stored. */
async function expectConsistent(id: string) {
  await scheduled(env, () => Date.now() + 2 * 3600_000).catch(() => {});
  const row = await findUploadRecord(database(env.DB), id);
  const stored = (await env.FILES.list({ prefix: `uploads/${id}/` })).objects.map((o) => o.key).sort();
  const expected = row && row.filesRemovedAt === null ? [row.objectKey, ...(row.thumbKey ? [row.thumbKey] : [])].sort() : [];
  expect(stored, JSON.stringify(row)).toEqual(expected);
  return row;
}

/** Runs `operation` failing at each storage step in turn, until it runs through without reaching the failure. */
async function atEveryStep(prepare: () => Promise<{ id: string; before: string | null }>, operation: (bindings: Partial<Cloudflare.Env>, id: string) => Promise<unknown>, after: (id: string, before: string | null) => Promise<void>) {
  for (let step = 1; step < 100; step++) {
    const { id, before } = await prepare();
    const fault = failing(step);
    const outcome = await operation(fault.bindings, id).catch((error) => String(error));
    try {
      await after(id, before);
    } catch (error) {
      throw new Error(`failing at step ${step} (${JSON.stringify(outcome)?.slice(0, 300)}): ${error}`);
    }
    if (fault.steps() < step) return step - 1;
  }
  throw new Error("the operation never finished");
}

async function newUpload(account: TestAccount, fields: Record<string, string> = {}, bytes?: Uint8Array) {
  const res = await call("/api", { method: "POST", key: account.full, body: uploadForm(bytes ?? (await uniquePng(Math.random())), { allow_duplicate: "1", ...fields }) });
  return res.body.data as { id: string; path: string };
}

describe("a crash at any step leaves the old state or the new one", () => {
  it("upload", async () => {
    const account = await newAccount();
    let lastId = "";
    const steps = await atEveryStep(
      async () => ({ id: "", before: null }),
      async (bindings) => {
        const res = await call("/api", { method: "POST", key: account.full, body: uploadForm(await uniquePng(Math.random()), { allow_duplicate: "1" }) }, bindings);
        if (res.status === 200) lastId = res.body.data.id;
      },
      async () => {
        // Nothing of a failed upload may stay (its files go at once or with the sweep); a made one is whole.
        await scheduled(env, () => Date.now() + 2 * 3600_000).catch(() => {});
        for (const object of (await env.FILES.list({ prefix: "uploads/" })).objects) {
          const id = object.key.split("/")[1]!;
          expect(await findUploadRecord(database(env.DB), id), object.key).toBeDefined();
        }
        if (lastId) await expectConsistent(lastId);
      },
    );
    expect(steps).toBeGreaterThan(3);
  });

  it("replace", async () => {
    const account = await newAccount();
    const steps = await atEveryStep(
      async () => {
        const upload = await newUpload(account);
        const row = await findUploadRecord(database(env.DB), upload.id);
        return { id: upload.id, before: row!.objectKey };
      },
      (bindings, id) => call(`/api/${id}/replace`, { method: "POST", key: account.full, body: uploadForm(fixtureBytes) }, bindings),
      async (id, before) => {
        const row = await expectConsistent(id);
        // The upload is whole: its old file, or the new one.
        expect(row!.objectKey === before || row!.mime === "image/gif").toBe(true);
      },
    );
    expect(steps).toBeGreaterThan(3);
  });

  it("delete", async () => {
    const account = await newAccount();
    const steps = await atEveryStep(
      async () => ({ id: (await newUpload(account)).id, before: null }),
      (bindings, id) => call(`/api/${id}`, { method: "DELETE", key: account.full }, bindings),
      async (id) => void (await expectConsistent(id)),
    );
    expect(steps).toBeGreaterThan(1);
  });

  it("conversion (a media job re-driven by the cron job)", async () => {
    const account = await newAccount();
    const bmp = await fixture("generated/photo.bmp");
    const steps = await atEveryStep(
      async () => {
        // The BMP's conversion needs the media service, which is down for the upload itself.
        const res = await call("/api", { method: "POST", key: account.full, body: uploadForm(bmp, { allow_duplicate: "1" }) }, { MEDIA_SERVICE_URL: DEAD_SERVICE });
        return { id: res.body.data.id, before: null };
      },
      async (bindings, id) => {
        const [job] = await mediaJobsOf(database(env.DB), [id]);
        await runMediaJob(processDeps({ ...env, ...bindings } as Cloudflare.Env, undefined, () => Date.now() + 10 * 60_000), job!.id);
      },
      async (id) => {
        const row = await expectConsistent(id);
        expect(["image/bmp", "image/webp"]).toContain(row!.mime);
      },
    );
    expect(steps).toBeGreaterThan(3);
  });

  it("expiry", async () => {
    const account = await newAccount();
    const steps = await atEveryStep(
      async () => ({ id: (await newUpload(account, { expires_in: "60" })).id, before: null }),
      (bindings) => sweepExpiredUploads(uploadDeps({ ...env, ...bindings } as Cloudflare.Env, undefined, () => Date.now() + 61_000)),
      async (id) => void (await expectConsistent(id)),
    );
    expect(steps).toBeGreaterThan(1);
  });
});

const fixtureBytes = await fixture("tiny/gif.gif");
