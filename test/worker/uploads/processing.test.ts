import { insertEndpoint } from "../webhooks/endpoint-rows";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { mediaJobDeps } from "../../../src/deps";
import { mediaService, type MediaService } from "../../../src/media/service";
import { FILE_PHASE_PERCENT } from "../../../src/model/ladder";
import type { DeliveryKey } from "../../../src/storage/webhook-outbox";
import { exhaustedWords } from "../../../src/uploads/media-jobs/failure";
import { MAX_ATTEMPTS, runMediaJob, type MediaJobDeps } from "../../../src/uploads/media-jobs/jobs";
import { redriveMediaJobs } from "../../../src/uploads/media-jobs/redrive";
import { DEAD_SERVICE, fixture, json, newAccount, request, upload, uploadForm, type TestAccount } from "../helpers";

/**
 * An upload's `processing` as its media job moves it, on the real media service: queued at the
 * upload, running once the job is claimed, ready with the job's new files (or failed with words
 * for the owner), each written with the job's own writes and with its event when an endpoint
 * takes it; an old job of a replaced upload writes nothing.
 */

interface Processing {
  state: string;
  percent: number | null;
  error: string | null;
  updated_at: string;
}

const processingOf = async (account: TestAccount, id: string): Promise<Processing> =>
  (await json(request(`/api/${id}`, { key: account.full }))).body.data.processing;

/** An endpoint of the account taking every event (its deliveries are never sent here). */
const endpointOf = (accountId: string) => insertEndpoint(accountId, "https://example.com/hook");

/** The account's events of a job's outcome (other changes have events of their own). */
const eventsOf = async (accountId: string) =>
  (
    await env.DB.prepare(
      "SELECT type, subject FROM webhook_events WHERE account_id = ? AND type IN ('upload.ready', 'upload.failed')",
    )
      .bind(accountId)
      .all<{ type: string; subject: string }>()
  ).results;

/** An upload whose runner's start was lost: its job waits, for the test to run. */
async function waitingUpload(account: TestAccount, bytes: Uint8Array) {
  const lost = { create: () => Promise.reject(new Error("lost")) } as unknown as Workflow;
  const { body } = await upload(account.full, bytes, {}, { app: { bindings: { MEDIA_JOBS: lost } } });
  const job = await env.DB.prepare("SELECT id FROM media_jobs WHERE upload_id = ? AND status = 'pending'")
    .bind(body.data.id)
    .first<{ id: string }>();
  return { id: body.data.id as string, jobId: job!.id, answered: body.data.processing as Processing };
}

/**
 * The job's deps, its progress asked for every 500 ms, its deliveries kept, and the upload's
 * `processing` read as each call of the media service starts.
 */
function watchedDeps(account: TestAccount, id: string) {
  const base = mediaJobDeps(env);
  const atCalls: Processing[] = [];
  const sent: DeliveryKey[] = [];
  const media: MediaService = {
    async call(call, input, length, watch) {
      atCalls.push(await processingOf(account, id));
      return base.media.call(call, input, length, watch);
    },
  };
  const deliveries = {
    sendBatch: async (messages: Iterable<{ body: DeliveryKey }>) => {
      sent.push(...[...messages].map((m) => m.body));
    },
  };
  const deps: MediaJobDeps = { ...base, media, deliveries, progressEveryMs: 500 };
  return { deps, atCalls, sent };
}

describe("processing", () => {
  it("moves queued, running, ready for a video, its percent rising, with its upload.ready event", async () => {
    const account = await newAccount();
    await endpointOf(account.id);
    const avi = await fixture("generated/clip.wmv");
    const { id, jobId, answered } = await waitingUpload(account, avi);
    expect(answered).toMatchObject({ state: "queued", percent: 0, error: null });
    // The conversion's answer comes 3 s after the call, as a longer video's would: meanwhile the
    // job asks the same instance how far it is, and writes what it learns.
    const held = await fetch(`${env.MEDIA_SERVICE_URL}/__hold?ms=3000&bytes=${avi.length}`, { method: "POST" });
    expect(held.status).toBe(204);
    const { deps, atCalls, sent } = watchedDeps(account, id);
    const seen: Processing[] = [];
    let finished = false;
    const job = runMediaJob(deps, jobId).finally(() => (finished = true));
    while (!finished) {
      seen.push(await processingOf(account, id));
      await new Promise((r) => setTimeout(r, 100));
    }
    // The file's phase reports into 0-30 (FILE_PHASE_PERCENT) and stays running for its ladder.
    expect(await job).toEqual({ outcome: "next" });
    expect(await processingOf(account, id)).toMatchObject({ state: "running", percent: FILE_PHASE_PERCENT });
    expect(await eventsOf(account.id)).toEqual([]);
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "done" });
    const ready = await processingOf(account, id);
    expect(ready).toMatchObject({ state: "ready", percent: 100, error: null });
    expect(atCalls[0]).toMatchObject({ state: "running", percent: null });
    // The ladder's call starts where the file's phase ended.
    expect(atCalls.at(-1)).toMatchObject({ state: "running", percent: FILE_PHASE_PERCENT });
    const running = seen.filter((p) => p.state === "running");
    const figures = running.map((p) => p.percent).filter((p): p is number => p !== null);
    expect(figures.length).toBeGreaterThan(0);
    expect(figures).toEqual([...figures].sort((a, b) => a - b));
    expect(figures.at(-1)).toBeGreaterThan(0);
    expect(figures.at(-1)).toBeLessThanOrEqual(FILE_PHASE_PERCENT);
    const events = await eventsOf(account.id);
    expect(events.map((e) => e.type)).toEqual(["upload.ready"]);
    expect(JSON.parse(events[0]!.subject)).toMatchObject({ id, processingState: "ready", mime: "video/mp4" });
    expect(sent).toHaveLength(1);
  });

  it("moves queued, running, ready for a HEIC image", async () => {
    const account = await newAccount();
    const { id, jobId, answered } = await waitingUpload(account, await fixture("heic/IMG_5195.HEIC"));
    expect(answered).toMatchObject({ state: "queued", percent: 0 });
    const { deps, atCalls } = watchedDeps(account, id);
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "done" });
    expect(atCalls.length).toBeGreaterThan(0);
    for (const at of atCalls) expect(at).toMatchObject({ state: "running", percent: null });
    const ready = await processingOf(account, id);
    expect(ready).toMatchObject({ state: "ready", percent: 100, error: null });
    expect(Date.parse(ready.updated_at)).toBeGreaterThanOrEqual(Date.parse(answered.updated_at));
    // No endpoint: no event.
    expect(await eventsOf(account.id)).toEqual([]);
  });

  it("fails a video whose conversion fails, in words for its owner, with its upload.failed event", async () => {
    const account = await newAccount();
    await endpointOf(account.id);
    const valid = await fixture("generated/clip.avi");
    const broken = new Uint8Array(4096);
    broken.set(valid.slice(0, 64)); // an AVI header, then nothing playable
    const { id, jobId } = await waitingUpload(account, broken);
    const { deps, sent } = watchedDeps(account, id);
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "failed" });
    const failed = await processingOf(account, id);
    expect(failed).toMatchObject({ state: "failed", percent: null });
    expect(failed.error).toMatch(/^The video could not be converted: \S/);
    expect(failed.error).not.toMatch(/media service \d{3}|\/tmp\//);
    const events = await eventsOf(account.id);
    expect(events.map((e) => e.type)).toEqual(["upload.failed"]);
    expect(JSON.parse(events[0]!.subject)).toMatchObject({
      id,
      processingState: "failed",
      processingError: failed.error,
    });
    expect(sent).toHaveLength(1);
  });

  it("goes back to queued while a failed attempt's retry waits", async () => {
    const account = await newAccount();
    const { id, jobId } = await waitingUpload(account, await fixture("generated/clip.m4v"));
    const { deps } = watchedDeps(account, id);
    const unreachable = mediaService({ ...env, MEDIA_SERVICE_URL: DEAD_SERVICE });
    const outcome = await runMediaJob({ ...deps, media: unreachable }, jobId);
    expect(outcome.outcome).toBe("retry");
    expect(await processingOf(account, id)).toMatchObject({ state: "queued", percent: 0, error: null });
  });

  it("fails a job out of attempts whose runner died (the cron job), in words, with its upload.failed event", async () => {
    const account = await newAccount();
    await endpointOf(account.id);
    const { id, jobId } = await waitingUpload(account, await fixture("generated/clip.mpg"));
    // As if its fifth runner had claimed it and vanished.
    const now = Date.now();
    await env.DB.prepare("UPDATE media_jobs SET status = 'running', attempts = ?, lease_until = ? WHERE id = ?")
      .bind(MAX_ATTEMPTS, now - 1, jobId)
      .run();
    const { deps, sent } = watchedDeps(account, id);
    // Runners of other due jobs (other tests') are not this test's to start.
    const runner = {
      start: async () => {},
      startMany: async () => {},
      state: async () => "alive" as const,
      restart: async () => {},
    };
    await redriveMediaJobs({ ...deps, runner });
    expect(await processingOf(account, id)).toMatchObject({
      state: "failed",
      percent: null,
      error: exhaustedWords("video", MAX_ATTEMPTS),
    });
    expect((await eventsOf(account.id)).map((e) => e.type)).toEqual(["upload.failed"]);
    expect(sent).toHaveLength(1);
  });

  it("lets no old job of a replaced upload write the new file's state", async () => {
    const account = await newAccount();
    await endpointOf(account.id);
    const { id, jobId } = await waitingUpload(account, await fixture("generated/clip.3gp"));
    // Replaced before its job ran: the new file has a job (and a state) of its own.
    const lost = { create: () => Promise.reject(new Error("lost")) } as unknown as Workflow;
    const replaced = await request(`/api/${id}/replace`, {
      method: "POST",
      key: account.full,
      body: uploadForm(await fixture("generated/clip.flv")),
      app: { bindings: { MEDIA_JOBS: lost } },
    });
    expect(replaced.status).toBe(200);
    const queued = await processingOf(account, id);
    expect(queued).toMatchObject({ state: "queued", percent: 0 });
    const { deps, atCalls } = watchedDeps(account, id);
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "done" });
    // Obsolete: never claimed for the new file, never called the service, wrote nothing.
    expect(atCalls).toEqual([]);
    expect(await processingOf(account, id)).toEqual(queued);
    expect(await eventsOf(account.id)).toEqual([]);
  });
});
