import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { operationAt, sizeHeaders, thumbnailLengthHeader } from "../../../container/src/contract";
import { mediaJobDeps } from "../../../src/deps";
import { mediaServiceVars } from "../../../src/media/container";
import { mediaService, MediaServiceError, type MediaService } from "../../../src/media/service";
import { MEDIA_CALL_TIMEOUT_MS, MEDIA_JOB_TIMEOUT_MS } from "../../../src/media/timeouts";
import {
  BUSY_RETRY_MS,
  JOB_TIME_LIMIT_MS,
  PLATFORM_RETRY_MS,
  spread,
  LEASE_MS,
  LEASE_RENEW_MS,
  MEDIA_CALLS_PER_JOB,
  runMediaJob,
} from "../../../src/uploads/media-jobs/jobs";
import { DEAD_SERVICE, fixture, newAccount, upload } from "../helpers";

/**
 * How media jobs call the media service, with a stand-in service: each call names the format
 * the upload was sniffed as, a timed-out job is not retried, and neither a call nor a job's
 * lease can be outlived by the work they cover.
 */
async function jobOf(uploadId: string) {
  return env.DB.prepare(
    "SELECT id, phase, status, attempts, last_error, lease_until FROM media_jobs WHERE upload_id = ?",
  )
    .bind(uploadId)
    .first<{
      id: string;
      phase: string;
      status: string;
      attempts: number;
      last_error: string | null;
      lease_until: number | null;
    }>();
}

/** An upload whose job is left pending (the real service is never reached). */
async function pendingUpload(name: string) {
  const account = await newAccount();
  const app = { bindings: { MEDIA_SERVICE_URL: DEAD_SERVICE } };
  const uploaded = (await upload(account.full, await fixture(name), { allow_duplicate: "1" }, { app })).body.data;
  const job = await jobOf(uploaded.id);
  expect(job?.status).toBe("pending");
  return { uploadId: uploaded.id as string, jobId: job!.id };
}

/** Runs the upload's job past its retry delay with `media` standing in for the service. */
async function runWith(jobId: string, media: MediaService, now = Date.now() + 2 * 3600_000) {
  await runMediaJob({ ...mediaJobDeps(env, undefined, () => now), media }, jobId);
}

/** Bytes no decoder takes for an image: the Worker hands their thumbnail to the service too. */
const OUTPUT = new Uint8Array(64).fill(7);

/** The media client, its requests answered by `answer` in place of the service. */
const standIn = (answer: (request: Request) => Response | Promise<Response>): MediaService =>
  mediaService(env, {
    async send(request) {
      await request.body?.cancel();
      return answer(request);
    },
  });

/** A call whose answer these tests never read: each is a failure. */
const PROBE = { operation: "probeVideo", format: "mp4" } as const;

/** An error answer as the service sends it. */
const serviceError = (status: number, error: string) => Response.json({ error }, { status });

/** A service that records each call's address and answers every one with OUTPUT. */
function recording() {
  const calls: string[] = [];
  const answer = (request: Request) => {
    calls.push(request.url);
    const headers = { "Content-Length": String(OUTPUT.length), ...sizeHeaders({ width: 320, height: 240 }) };
    return new Response(OUTPUT, { headers });
  };
  return { media: standIn(answer), answer, calls };
}

const route = (address: string) => {
  const url = new URL(address);
  return `${operationAt(url.pathname)} ${url.searchParams.get("format")}`;
};

describe("calls to the media service", () => {
  it.each([
    ["generated/clip.avi", ["videoToMp4 avi", "videoThumbnail mp4"]],
    ["generated/clip.3gp", ["videoToMp4 3gp", "videoThumbnail mp4"]],
    ["generated/clip.mpg", ["videoToMp4 mpeg", "videoThumbnail mp4"]],
    ["generated/clip.webm", ["stripVideo webm", "videoThumbnail webm"]],
    ["generated/clip.mp4", ["stripVideo mp4", "videoThumbnail mp4"]],
    ["heic/IMG_5195.HEIC", ["imageToWebp heic", "imageThumbnail webp"]],
    ["generated/photo.bmp", ["imageToWebp bmp", "imageThumbnail webp"]],
    ["generated/photo.tif", ["imageToWebp tiff", "imageThumbnail webp"]],
  ])("name the format %s was sniffed as, and then the converted file's", async (name, expected) => {
    const { uploadId, jobId } = await pendingUpload(name);
    const { media, calls } = recording();
    await runWith(jobId, media);
    expect(calls.map(route)).toEqual(expected);
    // A video's job goes on to its ladder (test/worker/uploads/ladder-phase.test.ts); an image's is done.
    const video = expected[0]!.startsWith("video") || expected[0]!.startsWith("strip");
    expect(await jobOf(uploadId)).toMatchObject(video ? { phase: "ladder", status: "pending" } : { status: "done" });
  });

  it.each([
    ["generated/clip.avi", "videoToMp4 avi"],
    ["generated/clip.webm", "stripVideo webm"],
  ])("asks once for %s's video and its thumbnail, which comes in front of it", async (name, expected) => {
    const { uploadId, jobId } = await pendingUpload(name);
    const thumb = new Uint8Array(300).fill(1);
    const video = new Uint8Array(70_000).fill(2);
    const calls: string[] = [];
    const media = standIn((request) => {
      calls.push(request.url);
      const body = new Uint8Array([...thumb, ...video]);
      // In pieces that straddle the boundary, as a network delivers them.
      const stream = new ReadableStream({
        start(controller) {
          for (let i = 0; i < body.length; i += 256) controller.enqueue(body.slice(i, i + 256));
          controller.close();
        },
      });
      const headers = { "Content-Length": String(body.length), ...thumbnailLengthHeader(thumb.length) };
      return new Response(stream, { headers });
    });
    await runWith(jobId, media);
    expect(calls.map(route)).toEqual([expected]);
    expect(new URL(calls[0]!).searchParams.get("thumbnail")).toBe("280");
    const row = await env.DB.prepare("SELECT object_key, thumb_key FROM uploads WHERE id = ?")
      .bind(uploadId)
      .first<{ object_key: string; thumb_key: string }>();
    expect(new Uint8Array(await (await env.FILES.get(row!.object_key))!.arrayBuffer())).toEqual(video);
    expect(new Uint8Array(await (await env.FILES.get(row!.thumb_key))!.arrayBuffer())).toEqual(thumb);
  });

  it("gives a job turned away as busy (503) its attempt back, and tries it again soon", async () => {
    const { uploadId, jobId } = await pendingUpload("generated/clip.flv");
    const before = (await jobOf(uploadId))!.attempts;
    const now = Date.now() + 2 * 3600_000;
    const busy = standIn(() => serviceError(503, "busy: 2 jobs running, 8 queued"));
    for (let i = 0; i < 10; i++) await runWith(jobId, busy, now);
    const job = await env.DB.prepare("SELECT status, attempts, next_attempt_at FROM media_jobs WHERE id = ?")
      .bind(jobId)
      .first<{ status: string; attempts: number; next_attempt_at: number }>();
    expect(job).toMatchObject({ status: "pending", attempts: before });
    expect(job!.next_attempt_at).toBeGreaterThanOrEqual(now + BUSY_RETRY_MS / 2);
    expect(job!.next_attempt_at).toBeLessThanOrEqual(now + 1.5 * BUSY_RETRY_MS);
  });

  it("tries again sooner after the container platform failed a call than after the media work failed", async () => {
    const retryBaseMs = mediaJobDeps(env).retryBaseMs;
    expect(PLATFORM_RETRY_MS).toBeLessThan(retryBaseMs);
    const now = Date.now() + 2 * 3600_000;
    const failing = (answer: Response) => standIn(() => answer);
    const nextAttempt = async (jobId: string) =>
      (await env.DB.prepare("SELECT status, attempts, next_attempt_at FROM media_jobs WHERE id = ?")
        .bind(jobId)
        .first<{ status: string; attempts: number; next_attempt_at: number }>())!;

    const lost = await pendingUpload("generated/clip.flv");
    // The container platform's answer: plain text, not the service's JSON.
    const disconnected = new Response("Container suddenly disconnected, try again", { status: 500 });
    await runWith(lost.jobId, failing(disconnected), now);
    const afterLost = await nextAttempt(lost.jobId);
    expect(afterLost.status).toBe("pending");
    // The upload's own attempt already failed on the dead service: this is the second.
    expect(afterLost.attempts).toBe(2);
    // The second attempt's delay (doubled), spread by up to half either way.
    expect(afterLost.next_attempt_at).toBeGreaterThanOrEqual(now + PLATFORM_RETRY_MS);
    expect(afterLost.next_attempt_at).toBeLessThanOrEqual(now + 3 * PLATFORM_RETRY_MS);

    const broken = await pendingUpload("generated/clip.flv");
    await runWith(broken.jobId, failing(serviceError(500, "ffmpeg exited with code 1")), now);
    expect((await nextAttempt(broken.jobId)).next_attempt_at).toBeGreaterThanOrEqual(now + retryBaseMs);
    expect((await nextAttempt(broken.jobId)).next_attempt_at).toBeLessThanOrEqual(now + 3 * retryBaseMs);
  });

  it("spreads the retries of jobs that failed together over half to one and a half times their delay", () => {
    expect(spread(1000, () => 0)).toBe(500);
    expect(spread(1000, () => 0.999)).toBe(1499);
    const delays = Array.from({ length: 200 }, () => spread(BUSY_RETRY_MS));
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(BUSY_RETRY_MS / 2);
    expect(Math.max(...delays)).toBeLessThan(1.5 * BUSY_RETRY_MS);
    expect(new Set(delays).size).toBeGreaterThan(100);
  });

  // R2 stores only bodies of a known length: an answer that ends short of what it declared, or
  // whose thumbnail claims more than it holds, fails the attempt, and the upload keeps its file.
  it.each([
    ["ends inside its video", 300, 70_000, 69_000],
    ["ends inside its thumbnail", 300, 70_000, 200],
    ["claims a thumbnail larger than the answer", 80_000, 70_000, 70_300],
    ["claims a thumbnail of more than 4 MiB", 5 * 1024 * 1024, 0, 70_300],
  ])("keeps the upload's file when the video answer %s", async (_case, thumbLength, videoLength, sent) => {
    const { uploadId, jobId } = await pendingUpload("generated/clip.avi");
    const fileBefore = await env.DB.prepare("SELECT object_key FROM uploads WHERE id = ?").bind(uploadId).first();
    const attemptsBefore = (await jobOf(uploadId))!.attempts;
    const media = standIn(() => {
      const declared = Math.max(thumbLength + videoLength, sent);
      const body = new Uint8Array(sent).fill(3);
      const stream = new ReadableStream({
        start(controller) {
          controller.enqueue(body);
          controller.close();
        },
      });
      const headers = { "Content-Length": String(declared), ...thumbnailLengthHeader(thumbLength) };
      return new Response(stream, { headers });
    });
    await runWith(jobId, media);
    const job = await jobOf(uploadId);
    expect(job).toMatchObject({ status: "pending", attempts: attemptsBefore + 1 });
    expect(job?.last_error).toMatch(/thumbnail|FixedLengthStream/);
    const fileAfter = await env.DB.prepare("SELECT object_key FROM uploads WHERE id = ?").bind(uploadId).first();
    expect(fileAfter).toEqual(fileBefore);
    // A request that follows is served as usual.
    expect((await upload((await newAccount()).full, await fixture("tiny/png-transparent.png"))).status).toBe(200);
  });

  it("tells the container platform's failures from the service's own", async () => {
    const call = async (url: string) => {
      const service = mediaService({ ...env, MEDIA_SERVICE_URL: url });
      const error = await service.call(PROBE, new Uint8Array([1, 2, 3]), 3).catch((e) => e);
      expect(error).toBeInstanceOf(MediaServiceError);
      return { status: error.status, platform: error.platform, message: error.message };
    };
    // Nothing listening, or a plain answer from something other than the service: the platform's.
    expect(await call(DEAD_SERVICE)).toMatchObject({ platform: true });
    expect(await call(`${env.LINK_SERVER_URL}/status/502`)).toMatchObject({ status: 502, platform: true });
    // The service's own JSON errors: the media work's.
    expect(await call(`${env.LINK_SERVER_URL}/json-error/500/ffmpeg%20crashed`)).toEqual({
      status: 500,
      platform: false,
      message: "ffmpeg crashed",
    });
    expect(await call(`${env.LINK_SERVER_URL}/json-error/422/bad%20media`)).toMatchObject({
      status: 422,
      platform: false,
    });
  });

  it("fails a job for good when the service timed out (504), recording why", async () => {
    const { uploadId, jobId } = await pendingUpload("generated/clip.flv");
    const media = standIn(() => serviceError(504, "timed out after 900 s"));
    await runWith(jobId, media);
    const job = await jobOf(uploadId);
    expect(job).toMatchObject({ status: "failed", attempts: 2 });
    expect(job?.last_error).toMatch(/timed out after 900 s/);
    expect(job?.last_error).toMatch(/504/);
    // The cron job leaves it alone from now on.
    await runWith(jobId, recording().media, Date.now() + 4 * 3600_000);
    expect((await jobOf(uploadId))?.attempts).toBe(2);
  });

  it("gives a runner's step longer than all its calls may last, each longer than the service's time limit", () => {
    expect(Number(mediaServiceVars(env).JOB_TIMEOUT_MS)).toBe(MEDIA_JOB_TIMEOUT_MS);
    expect(MEDIA_CALL_TIMEOUT_MS).toBeGreaterThan(MEDIA_JOB_TIMEOUT_MS);
    expect(JOB_TIME_LIMIT_MS).toBeGreaterThan(MEDIA_CALLS_PER_JOB * MEDIA_CALL_TIMEOUT_MS);
  });

  it("renews a working runner's lease, so that one that dies is noticed within minutes", async () => {
    expect(LEASE_MS).toBeLessThanOrEqual(5 * 60_000);
    expect(LEASE_RENEW_MS).toBeLessThan(LEASE_MS / 2);
    const { uploadId, jobId } = await pendingUpload("generated/clip.wmv");
    let now = Date.now() + 2 * 3600_000;
    const leases: number[] = [];
    const { answer } = recording();
    const media = standIn(async (request) => {
      const before = (await jobOf(uploadId))!.lease_until!;
      leases.push(before - now);
      // A call that outlasts the renewal period: the lease moves on while it runs.
      now += LEASE_RENEW_MS;
      vi.advanceTimersByTime(LEASE_RENEW_MS);
      for (let i = 0; i < 50 && (await jobOf(uploadId))!.lease_until === before; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      leases.push((await jobOf(uploadId))!.lease_until! - now);
      return answer(request);
    });
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    try {
      await runMediaJob({ ...mediaJobDeps(env, undefined, () => now), media }, jobId);
    } finally {
      vi.useRealTimers();
    }
    expect(leases).toEqual(Array(2 * MEDIA_CALLS_PER_JOB).fill(LEASE_MS));
    expect((await jobOf(uploadId))!.lease_until).toBeNull();
  });

  it("gives up on a call the service never answers, as a failure worth retrying", async () => {
    const stalled = mediaService(
      { ...env, MEDIA_SERVICE_URL: `${env.LINK_SERVER_URL}/stall-headers` },
      { callTimeoutMs: 300 },
    );
    const start = Date.now();
    const error = await stalled.call(PROBE, new Uint8Array([1, 2, 3]), 3).catch((e) => e);
    expect(Date.now() - start).toBeLessThan(5000);
    expect(error).toBeInstanceOf(MediaServiceError);
    expect(error.message).toMatch(/did not answer within/);
    expect(error.permanent).toBe(false);
  }, 10_000);
});
