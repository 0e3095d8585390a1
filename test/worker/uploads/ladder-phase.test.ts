import { insertEndpoint } from "../webhooks/endpoint-rows";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { LadderManifest } from "../../../container/src/ladder-contract";
import { mediaJobDeps } from "../../../src/deps";
import type { MediaService } from "../../../src/media/service";
import { ladderKey } from "../../../src/storage/keys";
import type { StoredLadder } from "../../../src/model/ladder";
import type { DeliveryKey } from "../../../src/storage/webhook-outbox";
import { sweepOrphanFiles, ORPHAN_GRACE_MS } from "../../../src/uploads/cleanup/orphan-files";
import { sweepExpiredUploads } from "../../../src/uploads/cleanup/expired-uploads";
import { dailyLimitWords } from "../../../src/uploads/media-jobs/failure";
import { LEASE_MS, runMediaJob, type MediaJobDeps } from "../../../src/uploads/media-jobs/jobs";
import { ladderByteLimit } from "../../../src/media/ladder-answer";
import type { LadderAnswer } from "../../../src/media/ladder-answer";
import { fixture, json, newAccount, request, upload, uploadForm, type TestAccount } from "../helpers";

/**
 * A video's media job past its file: the ladder phase's storage, fences, daily limit and
 * cleanup, with the media service's ladder answer stood in for (its making is the service's,
 * tested in test/node; the file phase runs on the real service). The answer is the shape
 * src/media/service.ts reads the service's into: a manifest, then each file.
 */
const encoder = new TextEncoder();

const FILES: Record<string, string> = {
  "master.m3u8": "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=500000\n240p.m3u8\n",
  "240p.m3u8": '#EXTM3U\n#EXT-X-MAP:URI="240p.mp4",BYTERANGE="10@0"\n#EXTINF:1,\n240p.mp4\n#EXT-X-ENDLIST\n',
  "240p.mp4": "0123456789abcdefghij",
  "storyboard.webp": "RIFF....WEBP",
  "storyboard.vtt": "WEBVTT\n\n00:00.000 --> 00:01.000\nstoryboard.webp#xywh=0,0,160,90\n",
};

function manifest(duration: number): LadderManifest {
  const files = Object.entries(FILES).map(([name, text]) => ({
    name,
    type: name.endsWith(".m3u8") ? "application/vnd.apple.mpegurl" : name.endsWith(".vtt") ? "text/vtt" : "video/mp4",
    length: encoder.encode(text).length,
  }));
  return {
    duration,
    rungs: [
      {
        name: "240p",
        width: 426,
        height: 240,
        bandwidth: 500_000,
        averageBandwidth: 400_000,
        codecs: "avc1.64000d,mp4a.40.2",
        remuxed: false,
        playlist: "240p.m3u8",
        media: "240p.mp4",
      },
    ],
    storyboard: {
      image: "storyboard.webp",
      vtt: "storyboard.vtt",
      tileWidth: 160,
      tileHeight: 90,
      columns: 10,
      tiles: 1,
      interval: 1,
    },
    files,
  };
}

const sized = (bytes: Uint8Array) => {
  const stream = new FixedLengthStream(bytes.length);
  const writer = stream.writable.getWriter();
  writer.write(bytes).then(() => writer.close());
  return stream.readable;
};

interface StandIn {
  /** Called before the answer: what a test does while the ladder is made. */
  during?: () => Promise<void>;
  /** The answer breaks after this many files (a service killed mid-answer). */
  breakAfter?: number;
  /** The ladder's length in seconds (1 unless said). */
  duration?: number;
  /** Put in place of the first byte of its media file: this attempt's own bytes, of the same length. */
  mark?: string;
}

/** The job's deps: the real service for the file, the stand-in for the ladder; the calls seen. */
function depsOf(standIn: StandIn = {}, overrides: Partial<MediaJobDeps> = {}) {
  const base = mediaJobDeps(env);
  const calls: { operation: string; maxBytes?: number; length: number }[] = [];
  const sent: DeliveryKey[] = [];
  const media: MediaService = {
    async call(call, input, length, watch) {
      calls.push({ operation: call.operation, length, ...("maxBytes" in call ? { maxBytes: call.maxBytes } : {}) });
      if (call.operation !== "videoLadder") return base.media.call(call, input, length, watch);
      if (input instanceof ReadableStream) await input.cancel();
      await watch?.report(50);
      await standIn.during?.();
      const entries = Object.entries(FILES);
      let at = 0;
      const answer: LadderAnswer = {
        manifest: manifest(standIn.duration ?? 1),
        async next() {
          if (at === standIn.breakAfter) throw new Error("media service unreachable: the connection was reset");
          const entry = entries[at++];
          if (!entry) return null;
          const file = manifest(standIn.duration ?? 1).files.find((f) => f.name === entry[0])!;
          const text = standIn.mark && file.name === "240p.mp4" ? standIn.mark + entry[1].slice(1) : entry[1];
          return { file, body: sized(encoder.encode(text)) };
        },
      };
      return answer as never;
    },
  };
  const deliveries = {
    sendBatch: async (messages: Iterable<{ body: DeliveryKey }>) => void sent.push(...[...messages].map((m) => m.body)),
  };
  const deps: MediaJobDeps = { ...base, media, deliveries, progressEveryMs: 200, ...overrides };
  return { deps, calls, sent };
}

const endpointOf = (accountId: string) => insertEndpoint(accountId, "https://example.com/hook");

/** A video uploaded with its runner's start lost: its job waits for the test to run it. */
async function waitingVideo(account: TestAccount, path = "tiny/mp4-with-audio.mp4") {
  const lost = { create: () => Promise.reject(new Error("lost")) } as unknown as Workflow;
  const { body } = await upload(account.full, await fixture(path), {}, { app: { bindings: { MEDIA_JOBS: lost } } });
  const job = await env.DB.prepare("SELECT id FROM media_jobs WHERE upload_id = ?")
    .bind(body.data.id)
    .first<{ id: string }>();
  return { id: body.data.id as string, jobId: job!.id };
}

const answerOf = async (account: TestAccount, id: string) =>
  (await json(request(`/api/${id}`, { key: account.full }))).body.data;

const rowOf = (id: string) =>
  env.DB.prepare("SELECT object_key, ladder, duration FROM uploads WHERE id = ?")
    .bind(id)
    .first<{ object_key: string; ladder: string | null; duration: number | null }>();

const jobOf = (jobId: string) =>
  env.DB.prepare("SELECT phase, status, attempts, source_key, charged_day FROM media_jobs WHERE id = ?")
    .bind(jobId)
    .first<{ phase: string; status: string; attempts: number; source_key: string; charged_day: number | null }>();

async function keysUnder(id: string) {
  return (await env.FILES.list({ prefix: `uploads/${id}/` })).objects.map((o) => o.key);
}

const ladderKeys = (keys: string[]) => keys.filter((key) => /\/hls-/.test(key));

const eventsOf = async (accountId: string) =>
  (
    await env.DB.prepare(
      "SELECT type FROM webhook_events WHERE account_id = ? AND type IN ('upload.ready', 'upload.failed')",
    )
      .bind(accountId)
      .all<{ type: string }>()
  ).results.map((e) => e.type);

describe("a video's ladder phase", () => {
  it("follows the file: duration set, still running, then the ladder stored, visible and announced once", async () => {
    const account = await newAccount();
    await endpointOf(account.id);
    const { id, jobId } = await waitingVideo(account);
    const { deps, calls, sent } = depsOf();
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "next" });
    const between = await answerOf(account, id);
    expect(between.processing).toMatchObject({ state: "running", percent: 30 });
    expect(between.duration).toBeGreaterThan(0);
    expect(between).toMatchObject({ hls: null, storyboard: null, rungs: null });
    expect(await eventsOf(account.id)).toEqual([]);
    const row = await rowOf(id);
    expect(await jobOf(jobId)).toMatchObject({
      phase: "ladder",
      status: "pending",
      attempts: 0,
      source_key: row!.object_key,
    });

    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "done" });
    const ladderCall = calls.find((c) => c.operation === "videoLadder")!;
    const stored = (await env.FILES.head(row!.object_key))!;
    expect(ladderCall).toMatchObject({ length: stored.size, maxBytes: ladderByteLimit(stored.size) });
    expect(ladderCall.maxBytes).toBe(6 * stored.size + 1024 * 1024);
    const after = await rowOf(id);
    const ladder = JSON.parse(after!.ladder!) as StoredLadder;
    expect(ladder.files.map((f) => f.name)).toEqual(Object.keys(FILES));
    for (const name of Object.keys(FILES))
      expect(await env.FILES.head(ladderKey(row!.object_key, ladder.id, name))).not.toBeNull();
    const ready = await answerOf(account, id);
    const name = row!.object_key.slice(row!.object_key.lastIndexOf("/") + 1);
    expect(ready.processing).toMatchObject({ state: "ready", percent: 100, error: null });
    expect(ready.hls).toBe(`http://media.test/h/${id}/master.m3u8`);
    expect(ready.storyboard).toBe(`http://media.test/h/${id}/${name}/storyboard.vtt`);
    expect(ready.rungs).toEqual([
      {
        name: "240p",
        width: 426,
        height: 240,
        bandwidth: 500_000,
        average_bandwidth: 400_000,
        codecs: "avc1.64000d,mp4a.40.2",
      },
    ]);
    expect(await eventsOf(account.id)).toEqual(["upload.ready"]);
    expect(sent).toHaveLength(1);
    expect(await jobOf(jobId)).toMatchObject({
      phase: "ladder",
      status: "done",
      charged_day: Math.floor(Date.now() / 86_400_000),
    });
  });

  it("reports the ladder's progress between the file's share and 100", async () => {
    const account = await newAccount();
    const { id, jobId } = await waitingVideo(account);
    const seen: unknown[] = [];
    const { deps } = depsOf({ during: async () => void seen.push((await answerOf(account, id)).processing) });
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "next" });
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "done" });
    // The service's 50 % of the ladder is 30 + 70 / 2.
    expect(seen).toMatchObject([{ state: "running", percent: 65 }]);
  });

  it("leaves nothing of a ladder whose file was replaced while it was made", async () => {
    const account = await newAccount();
    const { id, jobId } = await waitingVideo(account);
    const lost = { create: () => Promise.reject(new Error("lost")) } as unknown as Workflow;
    const replace = async () => {
      const replaced = await request(`/api/${id}/replace`, {
        method: "POST",
        key: account.full,
        body: uploadForm(await fixture("tiny/webm.webm")),
        app: { bindings: { MEDIA_JOBS: lost } },
      });
      expect(replaced.status).toBe(200);
    };
    const { deps } = depsOf({ during: replace });
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "next" });
    const ladderOf = (await rowOf(id))!.object_key;
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "done" });
    const now = await answerOf(account, id);
    expect(now).toMatchObject({ hls: null, rungs: null, duration: null });
    expect(now.processing.state).toBe("queued");
    expect(ladderKeys(await keysUnder(id))).toEqual([]);
    expect((await rowOf(id))!.object_key).not.toBe(ladderOf);
  });

  it("shows no half ladder when the service dies mid-answer, and makes it whole on the retry", async () => {
    const account = await newAccount();
    const { id, jobId } = await waitingVideo(account);
    const { deps } = depsOf({ breakAfter: 3 });
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "next" });
    const outcome = await runMediaJob(deps, jobId);
    expect(outcome.outcome).toBe("retry");
    expect(await answerOf(account, id)).toMatchObject({ hls: null, rungs: null, processing: { state: "queued" } });
    expect(ladderKeys(await keysUnder(id))).toEqual([]);
    const charged = await jobOf(jobId);
    await env.DB.prepare("UPDATE media_jobs SET next_attempt_at = 0 WHERE id = ?").bind(jobId).run();
    expect(await runMediaJob(depsOf().deps, jobId)).toEqual({ outcome: "done" });
    expect((await answerOf(account, id)).hls).not.toBeNull();
    expect(ladderKeys(await keysUnder(id))).toHaveLength(Object.keys(FILES).length);
    // Charged once, on the first attempt.
    const seconds = await env.DB.prepare("SELECT seconds FROM video_seconds WHERE account_id = ?")
      .bind(account.id)
      .first<{ seconds: number }>();
    expect(seconds!.seconds).toBe(Math.ceil((await rowOf(id))!.duration!));
    expect(charged!.charged_day).not.toBeNull();
  });

  it("waits for the next UTC day past the account's daily limit, its attempt given back; never for a video longer than it", async () => {
    const account = await newAccount();
    const first = await waitingVideo(account);
    const second = await waitingVideo(account, "generated/clip.m4v");
    const { deps: fileDeps } = depsOf();
    expect(await runMediaJob(fileDeps, first.jobId)).toEqual({ outcome: "next" });
    expect(await runMediaJob(fileDeps, second.jobId)).toEqual({ outcome: "next" });
    const seconds = async (id: string) => Math.ceil((await rowOf(id))!.duration!);
    const duration = Math.max(await seconds(first.id), await seconds(second.id));
    // Room for either video's seconds, not for both.
    const { deps, calls } = depsOf({}, { videoSecondsPerDay: duration });
    expect(await runMediaJob(deps, first.jobId)).toEqual({ outcome: "done" });
    const waiting = await runMediaJob(deps, second.jobId);
    expect(waiting.outcome).toBe("retry");
    const untilTomorrow = (Math.floor(Date.now() / 86_400_000) + 1) * 86_400_000 - Date.now();
    expect((waiting as { retryInMs: number }).retryInMs).toBeGreaterThanOrEqual(untilTomorrow);
    expect(calls.filter((c) => c.operation === "videoLadder")).toHaveLength(1);
    expect((await answerOf(account, second.id)).processing).toMatchObject({
      state: "queued",
      error: dailyLimitWords(duration),
    });
    expect(await jobOf(second.jobId)).toMatchObject({ status: "pending", attempts: 0, charged_day: null });

    // A video longer than a whole day's limit gets no ladder, in words; its file still plays.
    const third = await waitingVideo(account, "generated/clip.mpg");
    expect(await runMediaJob(fileDeps, third.jobId)).toEqual({ outcome: "next" });
    const tiny = { ...depsOf({}, { videoSecondsPerDay: 0.5 }) };
    expect(await runMediaJob(tiny.deps, third.jobId)).toEqual({ outcome: "failed" });
    const failed = await answerOf(account, third.id);
    expect(failed.processing.state).toBe("failed");
    expect(failed.processing.error).toMatch(/^The video's streaming versions could not be made .*longer than/);
    expect(failed.hls).toBeNull();
    expect((await request(new URL(failed.src).pathname)).status).toBe(200);
  });

  it("fails a ladder the service refuses, in words, leaving the video playable and no ladder files", async () => {
    const account = await newAccount();
    await endpointOf(account.id);
    const { id, jobId } = await waitingVideo(account);
    const { deps } = depsOf();
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "next" });
    const { MediaServiceError } = await import("../../../src/media/service");
    const refusing: MediaService = {
      call: async (call, input, length, watch) => {
        if (call.operation === "videoLadder") throw new MediaServiceError(422, "the ladder would exceed 3000 bytes");
        return deps.media.call(call, input, length, watch);
      },
    };
    expect(await runMediaJob({ ...deps, media: refusing }, jobId)).toEqual({ outcome: "failed" });
    const failed = await answerOf(account, id);
    expect(failed.processing.error).toBe(
      "The video's streaming versions could not be made (the video itself plays): the ladder would exceed 3000 bytes",
    );
    expect(failed.hls).toBeNull();
    expect(await eventsOf(account.id)).toEqual(["upload.failed"]);
    expect(ladderKeys(await keysUnder(id))).toEqual([]);
  });
});

describe("a video whose length was not known before its ladder", () => {
  it("is charged a second up front, then the rest of its ladder's length, which it keeps", async () => {
    const account = await newAccount();
    const { id, jobId } = await waitingVideo(account);
    const { deps } = depsOf({ duration: 7.2 });
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "next" });
    await env.DB.prepare("UPDATE uploads SET duration = NULL WHERE id = ?").bind(id).run();
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "done" });
    expect((await rowOf(id))!.duration).toBe(7.2);
    const charged = await env.DB.prepare("SELECT seconds FROM video_seconds WHERE account_id = ?")
      .bind(account.id)
      .first<{ seconds: number }>();
    expect(charged!.seconds).toBe(8);
  });
});

describe("a stored ladder", () => {
  async function ladderedVideo(account: TestAccount) {
    const { id, jobId } = await waitingVideo(account);
    const { deps } = depsOf();
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "next" });
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "done" });
    return id;
  }

  it("keeps whole the ladder of the attempt that took the job over, when one that lost its lease ends after it", async () => {
    const account = await newAccount();
    const { id, jobId } = await waitingVideo(account);
    expect(await runMediaJob(depsOf().deps, jobId)).toEqual({ outcome: "next" });
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let started = () => {};
    const inCall = new Promise<void>((resolve) => (started = resolve));
    const stale = runMediaJob(
      depsOf({
        mark: "X",
        during: async () => {
          started();
          await held;
        },
      }).deps,
      jobId,
    );
    await inCall;
    // Its lease runs out while its runner lives on (its renewals lost, say): another takes the job over.
    const later = Date.now() + LEASE_MS + 60_000;
    expect(await runMediaJob(depsOf({}, { now: () => later }).deps, jobId)).toEqual({ outcome: "done" });
    const row = (await rowOf(id))!;
    const stored = JSON.parse(row.ladder!) as StoredLadder;
    release();
    await stale;
    // The late attempt wrote keys of its own, was refused the row, and removed them: the ladder
    // the row names is the other's, every file of it stored and nothing else.
    expect((await rowOf(id))!.ladder).toBe(row.ladder);
    const expected = stored.files.map((file) => ladderKey(row.object_key, stored.id, file.name));
    expect(ladderKeys(await keysUnder(id)).sort()).toEqual(expected.sort());
    const media = await env.FILES.get(ladderKey(row.object_key, stored.id, "240p.mp4"));
    expect(await media!.text()).toBe(FILES["240p.mp4"]);
  });

  it("is kept by the orphan sweep while its row names it, and a stray ladder file is not", async () => {
    const account = await newAccount();
    const id = await ladderedVideo(account);
    const { object_key } = (await rowOf(id))!;
    const stray = ladderKey(object_key, "An0ther", "480p.mp4");
    await env.FILES.put(stray, "left by an attempt");
    const later = Date.now() + ORPHAN_GRACE_MS + 60_000;
    await sweepOrphanFiles({ ...mediaJobDeps(env), now: () => later });
    const keys = await keysUnder(id);
    expect(keys).not.toContain(stray);
    expect(ladderKeys(keys)).toHaveLength(Object.keys(FILES).length);
  });

  it("moves with its file on a visibility change, and goes with the upload when it is deleted", async () => {
    const account = await newAccount();
    const id = await ladderedVideo(account);
    const before = (await rowOf(id))!.object_key;
    const changed = await request(`/api/${id}`, {
      method: "PATCH",
      key: account.full,
      json: { password: "a secret one" },
    });
    expect(changed.status).toBe(200);
    const moved = (await rowOf(id))!;
    const after = moved.object_key;
    expect(after).not.toBe(before);
    const keys = await keysUnder(id);
    const { id: ladderId } = JSON.parse(moved.ladder!) as StoredLadder;
    expect(ladderKeys(keys).sort()).toEqual(
      Object.keys(FILES)
        .map((name) => ladderKey(after, ladderId, name))
        .sort(),
    );
    const answer = await answerOf(account, id);
    // Locked: the owner's links are signed.
    expect(answer.hls).toMatch(new RegExp(`/h/${id}/master\\.m3u8\\?exp=\\d+&sig=[0-9a-f]+$`));
    expect(answer.storyboard).toMatch(/storyboard\.vtt\?exp=\d+&sig=/);
    expect((await request(`/api/${id}`, { method: "DELETE", key: account.full })).status).toBe(200);
    expect(await keysUnder(id)).toEqual([]);
  });

  it("goes with its upload when the upload expires", async () => {
    const account = await newAccount();
    const id = await ladderedVideo(account);
    expect(ladderKeys(await keysUnder(id))).toHaveLength(Object.keys(FILES).length);
    await env.DB.prepare("UPDATE uploads SET expires_at = ? WHERE id = ?")
      .bind(Date.now() - 1, id)
      .run();
    await sweepExpiredUploads(mediaJobDeps(env));
    expect(await keysUnder(id)).toEqual([]);
  });
});
