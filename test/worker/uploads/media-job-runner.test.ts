import { introspectWorkflowInstance } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { scheduled } from "../../../src/entry/cron";
import { mediaJobDeps } from "../../../src/deps";
import { FIRST_RUN_GRACE_MS, runMediaJob } from "../../../src/uploads/media-jobs/jobs";
import { RUNNER_LOST_MS } from "../../../src/uploads/media-jobs/redrive";
import { runnerId, type MediaJobParams } from "../../../src/uploads/media-jobs/runner";
import { fixture, newAccount, startApp, uploadForm, request, json } from "../helpers";

/**
 * Media jobs on the real MEDIA_JOBS Workflow (other tests run attempts inline, helpers.ts
 * inlineJobs): the request only starts a runner, within its after-response budget, and the
 * runner's step does the work, however long it takes; the cron job starts a runner for a job
 * whose start was lost.
 */
async function jobOf(uploadId: string) {
  return env.DB.prepare("SELECT phase, status, attempts, last_error FROM media_jobs WHERE upload_id = ?")
    .bind(uploadId)
    .first<{ phase: string; status: string; attempts: number; last_error: string | null }>();
}

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, ms = 60_000): Promise<T> {
  for (const deadline = Date.now() + ms; ; await new Promise((r) => setTimeout(r, 100))) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)} after ${ms} ms`);
  }
}

async function upload(key: string, bytes: Uint8Array, bindings: Partial<Cloudflare.Env>) {
  const started = startApp("/api", { method: "POST", key, body: uploadForm(bytes), app: { bindings } });
  const response = await started.response;
  expect(response.status).toBe(200);
  // What the request leaves behind is the runner's start only: well within the 30 s budget.
  await started.settled();
  return ((await response.json()) as { data: { id: string; src: string } }).data;
}

/** A video uploaded while its runner's start was lost (the first start fails): its upload and job. */
async function uploadWithLostStart() {
  const account = await newAccount();
  const lost = { create: () => Promise.reject(new Error("lost")) } as unknown as Workflow;
  const uploaded = await upload(account.full, await fixture("generated/clip.mkv"), { MEDIA_JOBS: lost });
  const { id: jobId } = (await env.DB.prepare("SELECT id FROM media_jobs WHERE upload_id = ?")
    .bind(uploaded.id)
    .first<{ id: string }>())!;
  return { uploaded, jobId };
}

describe("media jobs on the Workflow", () => {
  it("converts a video in a runner started after the response", async () => {
    const account = await newAccount();
    const uploaded = await upload(account.full, await fixture("generated/clip.avi"), { MEDIA_JOBS: env.MEDIA_JOBS });
    await until(
      "the job",
      () => jobOf(uploaded.id),
      (job) => job?.status === "done",
    );
    const { body } = await json(request(`/api/${uploaded.id}`, { key: account.full }));
    expect(body.data.path).toMatch(/\.mp4$/);
    expect(body.data.thumb).toMatch(/\.webp$/);
  });

  it("finishes a conversion longer than the 30 s that work after a response gets", async () => {
    const account = await newAccount();
    // The media service answers the conversion 35 s after it was asked, as for a long video (whose
    // real conversion would take the minutes of CPU that the other tests need).
    const avi = await fixture("generated/odd.avi");
    const held = await fetch(`${env.MEDIA_SERVICE_URL}/__hold?ms=35000&bytes=${avi.length}`, { method: "POST" });
    expect(held.status).toBe(204);
    const started = Date.now();
    const uploaded = await upload(account.full, avi, {
      MEDIA_JOBS: env.MEDIA_JOBS,
    });
    const answered = Date.now();
    await until(
      "the job",
      () => jobOf(uploaded.id),
      (job) => job?.status === "done",
      280_000,
    );
    // Deployed, waitUntil work would have been cancelled long before this.
    expect(Date.now() - answered).toBeGreaterThan(30_000);
    const { body } = await json(request(`/api/${uploaded.id}`, { key: account.full }));
    expect(body.data.path).toMatch(/\.mp4$/);
    expect(body.data.thumb).toMatch(/\.webp$/);
    console.log(
      JSON.stringify({ longConversion: { uploadMs: answered - started, conversionMs: Date.now() - answered } }),
    );
  }, 300_000);

  it("sleeps until a failed attempt's retry is due and runs it, without the cron job", async () => {
    const { uploaded, jobId } = await uploadWithLostStart();
    const instanceId = `retry-${jobId}`;
    await using instance = await introspectWorkflowInstance(env.MEDIA_JOBS, instanceId);
    // The first attempt failed (as the container restarted, say) and set its retry 2 s ahead.
    const retryAt = Date.now() + 2000;
    await instance.modify(async (m) =>
      m.mockStepResult({ name: "attempt 1" }, { outcome: "retry", retryInMs: retryAt - Date.now() }),
    );
    await env.MEDIA_JOBS.create({ id: instanceId, params: { jobId } });
    await instance.waitForStatus("complete");
    expect(await instance.getOutput()).toBe("done");
    expect(Date.now()).toBeGreaterThanOrEqual(retryAt);
    // The retry did the file, and the next round the ladder.
    expect(await jobOf(uploaded.id)).toMatchObject({ phase: "ladder", status: "done", attempts: 1 });
  });

  it("sleeps the same after a re-run from the top: paused in its sleep and resumed past the retry's time", async () => {
    // Deployed, a runner that hibernates in its sleep is run again from the top, its finished
    // steps from their cache. Locally, resuming a paused instance does the same. (A restart of
    // the local engine would not: it has no alarms, so nothing wakes a sleeping instance.)
    const { uploaded, jobId } = await uploadWithLostStart();
    const instanceId = `replay-${jobId}`;
    await using instance = await introspectWorkflowInstance(env.MEDIA_JOBS, instanceId);
    await instance.modify(async (m) => m.mockStepResult({ name: "attempt 1" }, { outcome: "retry", retryInMs: 1500 }));
    await env.MEDIA_JOBS.create({ id: instanceId, params: { jobId } });
    const handle = await env.MEDIA_JOBS.get(instanceId);
    await until(
      "the runner's sleep",
      () => handle.status(),
      (s) => s.status === "running" || s.status === "waiting",
    );
    await new Promise((r) => setTimeout(r, 200));
    await handle.pause();
    // Past the time the sleep would have ended, then run again from the top.
    await new Promise((r) => setTimeout(r, 2000));
    await handle.resume();
    await instance.waitForStatus("complete");
    expect(await instance.getOutput()).toBe("done");
    expect(await jobOf(uploaded.id)).toMatchObject({ status: "done", attempts: 1 });
  });

  it("never runs an attempt before its retry is due: an early runner is told to wait", async () => {
    const { uploaded, jobId } = await uploadWithLostStart();
    // Its first attempt failed, and its retry is a minute away.
    const dueAt = Date.now() + 60_000;
    await env.DB.prepare(
      "UPDATE media_jobs SET status = 'pending', attempts = 1, last_error = 'media service 500', next_attempt_at = ? WHERE id = ?",
    )
      .bind(dueAt, jobId)
      .run();
    // A second runner (the cron job's, or a step the platform retried) comes now.
    const early = await runMediaJob(mediaJobDeps(env), jobId);
    expect(early).toMatchObject({ outcome: "retry" });
    const waitMs = (early as { retryInMs: number }).retryInMs;
    expect(waitMs).toBeGreaterThan(55_000);
    expect(waitMs).toBeLessThanOrEqual(60_000);
    expect(await jobOf(uploaded.id)).toMatchObject({ status: "pending", attempts: 1 });
    // Once due, the attempt runs.
    await env.DB.prepare("UPDATE media_jobs SET next_attempt_at = ? WHERE id = ?")
      .bind(Date.now() - 1, jobId)
      .run();
    // Its file's phase, then (a video) its ladder's, each counting its own attempts.
    expect(await runMediaJob(mediaJobDeps(env), jobId)).toEqual({ outcome: "next" });
    expect(await jobOf(uploaded.id)).toMatchObject({ phase: "ladder", status: "pending", attempts: 0 });
    expect(await runMediaJob(mediaJobDeps(env), jobId)).toEqual({ outcome: "done" });
    expect(await jobOf(uploaded.id)).toMatchObject({ phase: "ladder", status: "done", attempts: 1 });
  });

  it("starts a runner from the cron job when the request's start was lost", async () => {
    const { uploaded } = await uploadWithLostStart();
    expect(await jobOf(uploaded.id)).toMatchObject({ status: "pending", attempts: 0 });
    // The cron job leaves a job alone while its first runner may still start, then starts one.
    await scheduled(env, () => Date.now() + FIRST_RUN_GRACE_MS / 2);
    expect(await jobOf(uploaded.id)).toMatchObject({ status: "pending", attempts: 0 });
    await scheduled(env, () => Date.now() + FIRST_RUN_GRACE_MS + 1000);
    await until(
      "the job",
      () => jobOf(uploaded.id),
      (job) => job?.status === "done",
    );
  });

  it("gives a job one runner: the cron job starts none while it sleeps, and runs it again once it is lost", async () => {
    const { jobId } = await uploadWithLostStart();
    // Its runner, under the job's own id, failed its first attempt and sleeps a minute.
    await using instance = await introspectWorkflowInstance(env.MEDIA_JOBS, runnerId(jobId));
    await instance.modify(async (m) =>
      m.mockStepResult({ name: "attempt 1" }, { outcome: "retry", retryInMs: 60_000 }),
    );
    await env.MEDIA_JOBS.create({ id: runnerId(jobId), params: { jobId } });
    const handle = await env.MEDIA_JOBS.get(runnerId(jobId));
    // Asleep (the local engine says "running" for a sleeping instance, the platform "waiting").
    await until(
      "the runner's sleep",
      () => handle.status(),
      (s) => s.status === "running" || s.status === "waiting",
    );
    await new Promise((r) => setTimeout(r, 300));
    // The cron job, with the runner's calls counted.
    const calls = { create: 0, createBatch: 0, restart: 0 };
    const counted = new Proxy(env.MEDIA_JOBS, {
      get(target, name) {
        if (name === "create" || name === "createBatch")
          return (...args: unknown[]) => {
            calls[name]++;
            return (target[name] as (...a: unknown[]) => unknown)(...args);
          };
        if (name === "get")
          return async (id: string) => {
            const found = await target.get(id);
            return new Proxy(found, {
              get(inner, method) {
                if (method === "restart") calls.restart++;
                const value = Reflect.get(inner, method);
                return typeof value === "function" ? value.bind(inner) : value;
              },
            });
          };
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as Workflow<MediaJobParams>;
    const due = (at: number) =>
      env.DB.prepare(
        "UPDATE media_jobs SET status = 'pending', attempts = 1, last_error = 'media service 500', next_attempt_at = ? WHERE id = ?",
      )
        .bind(at, jobId)
        .run();
    // Due while its runner sleeps (as at the moment it wakes): no second runner.
    await due(Date.now());
    await scheduled({ ...env, MEDIA_JOBS: counted }, Date.now, { orphans: false });
    expect(calls).toEqual({ create: 0, createBatch: 0, restart: 0 });
    expect(["running", "waiting"]).toContain((await handle.status()).status);
    // Due for longer than any runner sleeps: taken as lost, and run again under the same id.
    await due(Date.now() - RUNNER_LOST_MS - 1000);
    await scheduled({ ...env, MEDIA_JOBS: counted }, Date.now, { orphans: false });
    expect(calls).toEqual({ create: 0, createBatch: 0, restart: 1 });
    // A second runner of the job cannot be made.
    await expect(env.MEDIA_JOBS.create({ id: runnerId(jobId), params: { jobId } })).rejects.toThrow();
  });
});
