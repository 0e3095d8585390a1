import { insertEndpoint } from "../webhooks/endpoint-rows";
import { env } from "cloudflare:workers";
import HLS from "hls-parser";
import { describe, expect, it } from "vitest";
import { mediaJobDeps } from "../../../src/deps";
import type { LadderAnswer } from "../../../src/media/ladder-answer";
import type { MediaService } from "../../../src/media/service";
import type { StoredLadder } from "../../../src/model/ladder";
import { ladderKey } from "../../../src/storage/keys";
import type { DeliveryKey } from "../../../src/storage/webhook-outbox";
import { runMediaJob, type MediaJobDeps } from "../../../src/uploads/media-jobs/jobs";
import { fixture, json, newAccount, request, upload, type TestAccount } from "../helpers";

/**
 * A video's job from its upload to its stored ladder on the real media service: a one-second
 * 320x240 clip (the suite's generated clip.mp4), a service answer cut off midway, and hostile files.
 */

const endpointOf = (accountId: string) => insertEndpoint(accountId, "https://example.com/hook");

/** A file uploaded with its runner's start lost: its job waits for the test to run it. */
async function waitingUpload(account: TestAccount, bytes: Uint8Array) {
  const lost = { create: () => Promise.reject(new Error("lost")) } as unknown as Workflow;
  const { status, body } = await upload(account.full, bytes, {}, { app: { bindings: { MEDIA_JOBS: lost } } });
  if (status !== 200) throw new Error(JSON.stringify(body));
  const job = await env.DB.prepare("SELECT id FROM media_jobs WHERE upload_id = ?")
    .bind(body.data.id)
    .first<{ id: string }>();
  return { id: body.data.id as string, jobId: job!.id };
}

function depsOf(media?: MediaService) {
  const base = mediaJobDeps(env);
  const sent: DeliveryKey[] = [];
  const deliveries = {
    sendBatch: async (messages: Iterable<{ body: DeliveryKey }>) => {
      sent.push(...[...messages].map((m) => m.body));
    },
  };
  const deps: MediaJobDeps = { ...base, media: media ?? base.media, deliveries, progressEveryMs: 200 };
  return { deps, sent };
}

const rowOf = (id: string) =>
  env.DB.prepare("SELECT object_key, ladder, duration FROM uploads WHERE id = ?")
    .bind(id)
    .first<{ object_key: string; ladder: string | null; duration: number | null }>();

const ladderKeysUnder = async (id: string) =>
  (await env.FILES.list({ prefix: `uploads/${id}/` })).objects.map((o) => o.key).filter((key) => key.includes("/hls-"));

const answerOf = async (account: TestAccount, id: string) =>
  (await json(request(`/api/${id}`, { key: account.full }))).body.data;

/** Runs the job's attempts, as its runner would, until one ends it or must wait. */
async function runToEnd(deps: MediaJobDeps, jobId: string) {
  for (let round = 0; round < 4; round++) {
    const { outcome } = await runMediaJob(deps, jobId);
    if (outcome !== "next") return outcome;
  }
  throw new Error("the job kept going");
}

describe("a video's ladder on the real media service", () => {
  it("is made after the file, stored whole, named by the row and announced once", async () => {
    const account = await newAccount();
    await endpointOf(account.id);
    const { id, jobId } = await waitingUpload(account, await fixture("generated/clip.mp4"));
    const { deps, sent } = depsOf();
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "next" });
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "done" });
    const row = (await rowOf(id))!;
    expect(row.duration).toBeGreaterThan(0.8);
    expect(row.duration).toBeLessThan(1.2);
    const ladder = JSON.parse(row.ladder!) as StoredLadder;
    // Every file the row names is stored, of the length it names, and nothing else.
    for (const file of ladder.files)
      expect((await env.FILES.head(ladderKey(row.object_key, ladder.id, file.name)))?.size).toBe(file.length);
    expect((await ladderKeysUnder(id)).sort()).toEqual(
      ladder.files.map((f) => ladderKey(row.object_key, ladder.id, f.name)).sort(),
    );
    const master = HLS.parse(await (await env.FILES.get(ladderKey(row.object_key, ladder.id, "master.m3u8")))!.text());
    expect(master.isMasterPlaylist).toBe(true);
    const variants = (master as HLS.types.MasterPlaylist).variants;
    expect(variants.map((v) => v.uri)).toEqual(ladder.rungs.map((r) => r.playlist));
    const answer = await answerOf(account, id);
    expect(answer.processing).toMatchObject({ state: "ready", percent: 100 });
    expect(answer.hls).toBe(`http://media.test/h/${id}/master.m3u8`);
    expect(answer.storyboard).toMatch(new RegExp(`^http://media\\.test/h/${id}/[^/]+\\.mp4/storyboard\\.vtt$`));
    expect(answer.rungs).toHaveLength(ladder.rungs.length);
    expect(answer.rungs[0]).toMatchObject({ height: 240, codecs: expect.stringMatching(/^avc1\./) });
    const events = await env.DB.prepare(
      "SELECT type FROM webhook_events WHERE account_id = ? AND type IN ('upload.ready', 'upload.failed')",
    )
      .bind(account.id)
      .all<{ type: string }>();
    expect(events.results.map((e) => e.type)).toEqual(["upload.ready"]);
    expect(sent).toHaveLength(1);
  });

  it("shows no half ladder when the service's answer is cut off midway, and makes it whole next time", async () => {
    const account = await newAccount();
    const { id, jobId } = await waitingUpload(account, await fixture("generated/clip.webm"));
    const real = mediaJobDeps(env).media;
    // The answer's second file ends early, as when the service is killed while sending it.
    const cut: MediaService = {
      async call(call, input, length, watch) {
        const answer = await real.call(call, input, length, watch);
        if (call.operation !== "videoLadder") return answer;
        const ladder = answer as LadderAnswer;
        let files = 0;
        return {
          manifest: ladder.manifest,
          async next() {
            const part = await ladder.next();
            if (!part || ++files < 2) return part;
            // Of its stated length, as the real one, but ending after its first bytes.
            const sized = new FixedLengthStream(part.file.length);
            const reader = part.body.getReader();
            const writer = sized.writable.getWriter();
            (async () => {
              const { value } = await reader.read();
              if (value) await writer.write(value.slice(0, 1));
              await reader.cancel();
              await writer.abort(new Error("media service unreachable: the connection was reset"));
            })().catch(() => {});
            const body = sized.readable;
            return { file: part.file, body };
          },
        } as never;
      },
    };
    expect(await runMediaJob(depsOf(cut).deps, jobId)).toEqual({ outcome: "next" });
    expect((await runMediaJob(depsOf(cut).deps, jobId)).outcome).toBe("retry");
    expect(await answerOf(account, id)).toMatchObject({ hls: null, rungs: null, processing: { state: "queued" } });
    expect(await ladderKeysUnder(id)).toEqual([]);
    await env.DB.prepare("UPDATE media_jobs SET next_attempt_at = 0 WHERE id = ?").bind(jobId).run();
    expect(await runMediaJob(depsOf().deps, jobId)).toEqual({ outcome: "done" });
    const ladder = JSON.parse((await rowOf(id))!.ladder!) as StoredLadder;
    expect(await ladderKeysUnder(id)).toHaveLength(ladder.files.length);
  });

  it.each([["tiny/AudioVideoInterleave.avi"], ["tiny/Mpeg4.mp4"]])(
    "ends %s, which no tool reads whole, as failed, in words, with no ladder",
    async (name) => {
      const account = await newAccount();
      const { id, jobId } = await waitingUpload(account, await fixture(name));
      expect(await runToEnd(depsOf().deps, jobId)).toBe("failed");
      const answer = await answerOf(account, id);
      expect(answer.processing.state).toBe("failed");
      expect(answer.processing.error).toMatch(/^The video(?:'s streaming versions)? could not be (?:converted|made)/);
      expect(answer).toMatchObject({ hls: null, storyboard: null, rungs: null });
      expect(await ladderKeysUnder(id)).toEqual([]);
    },
  );

  it("learns the length of a WebM whose header states none from its packets, and charges it then", async () => {
    const account = await newAccount();
    const { id, jobId } = await waitingUpload(account, await fixture("tiny/webm.webm"));
    const { deps } = depsOf();
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "next" });
    expect((await rowOf(id))!.duration).toBeNull();
    expect(await runMediaJob(deps, jobId)).toEqual({ outcome: "done" });
    const answer = await answerOf(account, id);
    expect(answer.processing).toMatchObject({ state: "ready", error: null });
    expect(answer.duration).toBeGreaterThan(0);
    expect(answer.hls).not.toBeNull();
    expect((await request(new URL(answer.src).pathname)).status).toBe(200);
  });
});
