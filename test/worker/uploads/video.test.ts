import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callHeaders, callPath, type VideoFormat } from "../../../container/src/contract";
import { readImageHeader } from "../../../src/media/image-header";
import { exhaustedWords } from "../../../src/uploads/media-jobs/failure";
import {
  DEAD_SERVICE,
  fixture,
  newAccount,
  scheduledInline,
  type TestAccount,
  request,
  json,
  bytesOf,
  upload,
} from "../helpers";

const uploadWith = async (account: TestAccount, bytes: Uint8Array, bindings: Partial<Cloudflare.Env> = {}) =>
  (await upload(account.full, bytes, {}, { app: { bindings } })).body.data;

async function job(uploadId: string) {
  return env.DB.prepare("SELECT phase, status, attempts, last_error FROM media_jobs WHERE upload_id = ?")
    .bind(uploadId)
    .first<{ phase: string; status: string; attempts: number; last_error: string | null }>();
}

/** Asks the media service (ffprobe) what a served video of `format` (mp4 or webm) is. */
async function probe(bytes: Uint8Array, format: VideoFormat = "mp4") {
  const res = await fetch(`${env.MEDIA_SERVICE_URL}${callPath({ operation: "probeVideo", format })}`, {
    method: "POST",
    headers: callHeaders(env.MEDIA_SECRET, bytes.length),
    body: bytes,
  });
  expect(res.status).toBe(200);
  return res.json<{
    container: string;
    videoCodec: string;
    audioCodec: string | null;
    width: number;
    height: number;
    rotation: number;
  }>();
}

/** MP4 keeps a location in a `loci` box (3GPP) or a `©xyz` atom (QuickTime). */
const hasLocation = (bytes: Uint8Array) =>
  contains(bytes, new TextEncoder().encode("loci")) || contains(bytes, new Uint8Array([0xa9, 0x78, 0x79, 0x7a]));

function contains(bytes: Uint8Array, text: Uint8Array | string) {
  const needle = typeof text === "string" ? new TextEncoder().encode(text) : text;
  outer: for (let i = bytes.indexOf(needle[0]!); i !== -1; i = bytes.indexOf(needle[0]!, i + 1)) {
    for (let j = 1; j < needle.length; j++) if (bytes[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

async function objectsOf(uploadId: string) {
  return (await env.FILES.list({ prefix: `uploads/${uploadId}/` })).objects.map((o) => o.key);
}

describe("video uploads", () => {
  it.each([
    ["clip.avi", 320, 240],
    ["clip.mov", 320, 240],
    ["clip.m4v", 320, 240],
    ["clip.mkv", 320, 240],
    ["clip.mpg", 320, 240],
    ["clip.wmv", 320, 240],
    ["clip.flv", 320, 240],
    ["clip.3gp", 176, 144],
    ["rotated.mov", 240, 320],
    ["odd.avi", 320, 240],
  ])("converts %s to MP4 after the response (%i x %i)", async (name, width, height) => {
    const account = await newAccount();
    const original = await fixture(`generated/${name}`);
    const uploaded = await uploadWith(account, original);
    expect(uploaded.type).toBe("video");
    expect(uploaded.path).not.toMatch(/\.mp4$/);
    expect((await job(uploaded.id))?.status).toBe("done");

    const { body } = await json(request(`/api/${uploaded.id}`, { key: account.full }));
    const data = body.data;
    expect(data.path).toMatch(/\.mp4$/);
    expect(data.src).toBe(uploaded.src);
    expect([data.width, data.height]).toEqual(
      name === "odd.avi" ? [expect.any(Number), expect.any(Number)] : [width, height],
    );
    const { res, bytes } = await bytesOf(request(data.src));
    expect(res.headers.get("Content-Type")).toBe("video/mp4");
    expect(data.size).toBe(bytes.length);
    const probed = await probe(bytes);
    expect(probed).toMatchObject({ videoCodec: "h264", audioCodec: "aac" });
    expect([probed.width, probed.height]).toEqual([data.width, data.height]);
    expect((probed.width % 2) + (probed.height % 2)).toBe(0);
    expect(hasLocation(bytes)).toBe(false);

    const thumb = await bytesOf(request(data.thumb));
    expect(thumb.res.headers.get("Content-Type")).toBe("image/webp");
    const thumbInfo = readImageHeader("webp", thumb.bytes);
    expect("width" in thumbInfo && thumbInfo.width).toBe(Math.min(280, data.width));
    // The poster's placeholder comes with it (src/uploads/placeholders.ts).
    expect(data.placeholder).toEqual(expect.any(String));
    expect(data.color).toMatch(/^#[0-9a-f]{6}$/);
    // Only the converted file, its thumbnail and the ladder made of it remain.
    const objects = await objectsOf(uploaded.id);
    expect(objects.filter((key) => !key.includes("/hls-")).sort()).toEqual(
      [
        new URL(data.path).pathname.replace("/f/", "uploads/"),
        new URL(data.thumb).pathname.replace("/t/", "uploads/"),
      ].sort(),
    );
    expect(data.hls).not.toBeNull();
    const ladder = objects.filter((key) => key.includes("/hls-"));
    expect(ladder.length).toBeGreaterThanOrEqual(3);
    for (const key of ladder) expect(key).toContain(`/v/${new URL(data.path).pathname.split("/").pop()}/hls-`);
  });

  it("keeps MP4 as MP4 but removes its location by a remux, keeping the rotation", async () => {
    const account = await newAccount();
    const original = await fixture("generated/rotated.mp4");
    expect(hasLocation(original)).toBe(true);
    const uploaded = await uploadWith(account, original);
    const { body } = await json(request(`/api/${uploaded.id}`, { key: account.full }));
    expect(body.data).toMatchObject({ width: 240, height: 320, placeholder: expect.any(String) });
    expect(body.data.path).toMatch(/\.mp4$/);
    expect(body.data.path).not.toBe(uploaded.path);
    const { bytes } = await bytesOf(request(body.data.src));
    expect(hasLocation(bytes)).toBe(false);
    const probed = await probe(bytes);
    expect(probed).toMatchObject({ videoCodec: "h264", width: 240, height: 320 });
    expect([90, 270]).toContain(probed.rotation);
  });

  it("keeps WebM as WebM without its metadata", async () => {
    const account = await newAccount();
    const original = await fixture("generated/clip.webm");
    expect(contains(original, "secret place")).toBe(true);
    const uploaded = await uploadWith(account, original);
    const { body } = await json(request(`/api/${uploaded.id}`, { key: account.full }));
    expect(body.data.path).toMatch(/\.webm$/);
    expect(body.data).toMatchObject({ width: 320, height: 240 });
    const { res, bytes } = await bytesOf(request(body.data.src));
    expect(res.headers.get("Content-Type")).toBe("video/webm");
    expect(contains(bytes, "secret place")).toBe(false);
    expect((await probe(bytes, "webm")).videoCodec).toBe("vp8");
  });
});

describe("durable conversion", () => {
  it("serves the original while the service is down, and converts on the cron job's retry", async () => {
    const account = await newAccount();
    const original = await fixture("generated/clip.avi");
    const uploaded = await uploadWith(account, original, { MEDIA_SERVICE_URL: DEAD_SERVICE });
    const pending = await job(uploaded.id);
    expect(pending).toMatchObject({ status: "pending", attempts: 1 });
    // Through the Container binding a dead service is a disconnected container: a failure worth a retry.
    expect(pending?.last_error).toMatch(/media service 500: Container suddenly disconnected/);

    const before = await bytesOf(request(uploaded.src));
    expect(before.res.headers.get("Content-Type")).toBe("video/x-msvideo");
    expect(before.bytes).toEqual(original);

    // Not due yet: the retry waits for its backoff.
    await scheduledInline(env);
    expect((await job(uploaded.id))?.attempts).toBe(1);

    await scheduledInline(env, () => Date.now() + 61_000);
    // Its file on the second attempt, then its ladder on its phase's first.
    expect(await job(uploaded.id)).toMatchObject({ phase: "ladder", status: "done", attempts: 1 });
    const after = await bytesOf(request(uploaded.src));
    expect(after.res.headers.get("Content-Type")).toBe("video/mp4");
  });

  it("gives up after a bounded number of attempts, recording the failure and keeping the original", async () => {
    const account = await newAccount();
    const original = await fixture("generated/clip.flv");
    const uploaded = await uploadWith(account, original, { MEDIA_SERVICE_URL: DEAD_SERVICE });
    const dead = { ...env, MEDIA_SERVICE_URL: DEAD_SERVICE };
    for (let hour = 1; hour <= 6; hour++) await scheduledInline(dead, () => Date.now() + hour * 3_600_000);
    expect(await job(uploaded.id)).toMatchObject({ status: "failed", attempts: 5 });
    const { body } = await json(request(`/api/${uploaded.id}`, { key: account.full }));
    expect(body.data.processing).toMatchObject({ state: "failed", error: exhaustedWords("video", 5) });
    // Nothing more happens, even with the service back.
    await scheduledInline(env, () => Date.now() + 10 * 3_600_000);
    expect((await job(uploaded.id))?.attempts).toBe(5);
    const { res, bytes } = await bytesOf(request(uploaded.src));
    expect(res.status).toBe(200);
    expect(bytes).toEqual(original);
  });

  it("fails at once, keeping the original, when the media itself is unreadable", async () => {
    const account = await newAccount();
    const valid = await fixture("generated/clip.avi");
    const broken = new Uint8Array(4096);
    broken.set(valid.slice(0, 64)); // an AVI header, then nothing playable
    const uploaded = await uploadWith(account, broken);
    expect(await job(uploaded.id)).toMatchObject({ status: "failed", attempts: 1 });
    expect((await bytesOf(request(uploaded.src))).bytes).toEqual(broken);
    expect((await json(request(`/api/${uploaded.id}`, { key: account.full }))).body.data.path).toBe(uploaded.path);
  });

  it("takes over a job whose runner died (lease expired)", async () => {
    const account = await newAccount();
    const uploaded = await uploadWith(account, await fixture("generated/clip.mkv"), {
      MEDIA_SERVICE_URL: DEAD_SERVICE,
    });
    // As if a runner had claimed it and then vanished.
    await env.DB.prepare("UPDATE media_jobs SET status = 'running', lease_until = ? WHERE upload_id = ?")
      .bind(Date.now() + 60_000, uploaded.id)
      .run();
    await scheduledInline(env, () => Date.now() + 30_000);
    expect((await job(uploaded.id))?.status).toBe("running");
    await scheduledInline(env, () => Date.now() + 61 * 60_000);
    expect((await job(uploaded.id))?.status).toBe("done");
    expect((await json(request(`/api/${uploaded.id}`, { key: account.full }))).body.data.path).toMatch(/\.mp4$/);
  });

  it("drops the work of an upload deleted before it ran, leaving no files behind", async () => {
    const account = await newAccount();
    const uploaded = await uploadWith(account, await fixture("generated/clip.wmv"), {
      MEDIA_SERVICE_URL: DEAD_SERVICE,
    });
    await json(request(`/api/${uploaded.id}`, { key: account.full, method: "DELETE" }));
    await scheduledInline(env, () => Date.now() + 61_000);
    expect((await job(uploaded.id))?.status).toBe("done");
    expect(await objectsOf(uploaded.id)).toEqual([]);
  });
});
