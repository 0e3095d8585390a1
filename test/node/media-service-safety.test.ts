import { readFileSync, readdirSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMediaService, type MediaServiceProcess } from "../../scripts/lib/media.mjs";
import { freePort } from "../../scripts/lib/server.mjs";
import { ffmpeg, MEDIA_TOOLS_ENV } from "../support/tools";

/**
 * What the media service refuses to do with an input, whatever the Worker sent: read it as
 * another format than the one the Worker sniffed (ffmpeg's demuxer is forced, sharp's loader
 * checked), decode a video whose frames or duration are absurd, or keep working for a client
 * that went away.
 */
const SECRET = "media-safety-test-secret-0123456789";
let dir: string;
let media: MediaServiceProcess;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "media-safety-"));
  media = await startMediaService({ port: await freePort(), secret: SECRET, env: MEDIA_TOOLS_ENV });
});
afterAll(async () => {
  await media?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function job(route: string, body: Uint8Array, signal?: AbortSignal) {
  const res = await fetch(`${media.url}${route}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${SECRET}` },
    body,
    signal,
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const error = res.ok ? undefined : (JSON.parse(Buffer.from(bytes).toString()) as { error: string }).error;
  return { status: res.status, bytes, error };
}

/**
 * A video made by ffmpeg from `args` (inputs and codec options), in the test's folder. ffmpeg runs
 * without blocking the event loop: a long encode that blocked it would let the service close the
 * idle kept-alive connection unseen, and the next job would be sent on a closed socket.
 */
async function video(name: string, args: string[]): Promise<Uint8Array> {
  const file = path.join(dir, name);
  await ffmpeg([...args, file]);
  return new Uint8Array(await readFile(file));
}

const clip = (seconds: number, size: string) => [
  "-f",
  "lavfi",
  "-i",
  `testsrc=size=${size}:rate=25:duration=${seconds}`,
];

describe("the input format is the one the Worker names", () => {
  it("reads an HLS playlist sent as MP4 as MP4 (422), never the files it points at", async () => {
    // The file the playlist points at: a playable video that must not come back.
    const target = path.join(dir, "elsewhere.ts");
    await ffmpeg([...clip(1, "64x48"), "-c:v", "mpeg2video", target]);
    const playlist = new TextEncoder().encode(
      `#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:1.0,\nfile://${target}\n#EXT-X-ENDLIST\n`,
    );
    for (const route of ["/video/mp4?format=mp4", "/thumbnail?width=280&format=mp4", "/probe?format=mp4"]) {
      const result = await job(route, playlist);
      expect(result.status, route).toBe(422);
    }
  });

  it("refuses a concat list sent as MP4 (422)", async () => {
    const target = path.join(dir, "listed.mp4");
    await ffmpeg([...clip(1, "64x48"), "-c:v", "libx264", "-pix_fmt", "yuv420p", target]);
    const list = new TextEncoder().encode(`ffconcat version 1.0\nfile ${target}\n`);
    const result = await job("/video/mp4?format=mp4", list);
    expect(result.status).toBe(422);
  });

  it("still converts, remuxes and probes real files of the named format", async () => {
    const mp4 = await video("real.mp4", [...clip(1, "320x240"), "-c:v", "libx264", "-pix_fmt", "yuv420p"]);
    expect((await job("/video/mp4?format=mp4", mp4)).status).toBe(200);
    expect((await job("/video/strip?format=mp4", mp4)).status).toBe(200);
    expect((await job("/thumbnail?width=280&format=mp4", mp4)).status).toBe(200);
    const probed = await job("/probe?format=mp4", mp4);
    expect(JSON.parse(Buffer.from(probed.bytes).toString())).toMatchObject({
      width: 320,
      height: 240,
      videoCodec: "h264",
    });
    // MPEG is a program stream, a transport stream or bare video, each read by its own demuxer.
    // npm's ffprobe build crashes on any transport stream: the conversion goes on without the
    // early size check, the decoders' own pixel limit still applying.
    const programStream = await video("real.mpg", [...clip(1, "320x240"), "-c:v", "mpeg2video", "-f", "vob"]);
    expect((await job("/video/mp4?format=mpeg", programStream)).status).toBe(200);
    const transport = await video("real.ts", [...clip(1, "320x240"), "-c:v", "mpeg2video", "-f", "mpegts"]);
    expect((await job("/video/mp4?format=mpeg", transport)).status).toBe(200);
    expect((await job("/thumbnail?width=280&format=mpeg", transport)).status).toBe(200);
    const bare = await video("real.m2v", [...clip(1, "320x240"), "-c:v", "mpeg2video", "-f", "mpeg2video"]);
    expect((await job("/video/mp4?format=mpeg", bare)).status).toBe(200);
  });

  it("answers 400 when the format is missing or not one it reads", async () => {
    const mp4 = await readFile(path.join(dir, "real.mp4"));
    for (const route of [
      "/video/mp4",
      "/video/mp4?format=hls",
      "/thumbnail?width=280&format=concat",
      "/probe",
      "/video/strip?format=avi",
      "/image/webp?quality=82",
      "/image/thumbnail?width=280&format=svg",
    ]) {
      expect((await job(route, mp4)).status, route).toBe(400);
    }
  });

  it("refuses an image whose bytes are another format than the one named (422)", async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#08f" } })
      .png()
      .toBuffer();
    expect((await job("/image/webp?quality=82&format=jpeg", png)).status).toBe(422);
    expect((await job("/image/thumbnail?width=280&format=bmp", png)).status).toBe(422);
    expect((await job("/image/thumbnail?width=280&format=png", png)).status).toBe(200);
    // libvips would render SVG (and follow what it references): no loader outside the list runs.
    const svg = new TextEncoder().encode(
      '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>',
    );
    for (const format of ["png", "jpeg", "webp", "tiff", "gif", "heic"]) {
      expect((await job(`/image/thumbnail?width=280&format=${format}`, svg)).status, format).toBe(422);
    }
  });
});

describe("video limits, from the probe before any decoding", () => {
  it("refuses a video whose frames are over 8192 px a side", async () => {
    const wide = await video("wide.mkv", [
      "-f",
      "lavfi",
      "-i",
      "color=size=8200x16:rate=5:duration=0.4",
      "-c:v",
      "ffv1",
    ]);
    for (const route of ["/video/mp4?format=mkv", "/thumbnail?width=280&format=mkv"]) {
      const result = await job(route, wide);
      expect(result.status, route).toBe(422);
      expect(result.error, route).toMatch(/8192/);
    }
  });

  it("refuses a video that declares more than 4 hours", async () => {
    // Five frames an hour apart: tiny, yet five hours long.
    const long = await video("long.mkv", [
      "-f",
      "lavfi",
      "-i",
      "color=size=16x16:rate=1/3600:duration=18000",
      "-c:v",
      "ffv1",
    ]);
    const result = await job("/video/mp4?format=mkv", long);
    expect(result.status).toBe(422);
    expect(result.error).toMatch(/hours/);
  });
});

/** The processes a process started, from /proc (Linux). */
function children(pid: number): number[] {
  const tasks = `/proc/${pid}/task`;
  return readdirSync(tasks).flatMap((task) =>
    readFileSync(`${tasks}/${task}/children`, "utf8").split(" ").filter(Boolean).map(Number),
  );
}

const health = async () => (await (await fetch(`${media.url}/health`)).json()) as { running: number; queued: number };

describe("a job whose client went away", () => {
  it("stops its tools and frees its place at once", async () => {
    const long = await video("slow.avi", [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=1280x720:rate=25:duration=30",
      "-c:v",
      "mpeg4",
      "-q:v",
      "8",
    ]);
    const client = new AbortController();
    let answered: { status?: number; error?: string } | undefined;
    const done = job("/video/mp4?format=avi", long, client.signal)
      .catch((error: Error) => ({ error: String(error.cause ?? error) }))
      .then((result) => (answered = result));
    // Until the service has taken the upload and started: seconds when other test files share the cores.
    // Running, and its tool started: the service counts the job a moment before it spawns ffmpeg.
    const started = async () => (await health()).running > 0 && children(media.pid!).length > 0;
    for (const deadline = Date.now() + 60_000; !(await started()); ) {
      // A job answered before it was seen running says why, rather than a wait to the deadline.
      if (answered !== undefined)
        throw new Error(`the conversion ended before it was seen: ${answered.status} ${answered.error}`);
      if (Date.now() > deadline) throw new Error(`the conversion never started: ${JSON.stringify(await health())}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    client.abort();
    await done;
    const deadline = Date.now() + 2000;
    while (Date.now() < deadline && ((await health()).running > 0 || children(media.pid!).length > 0))
      await new Promise((r) => setTimeout(r, 50));
    expect(await health()).toMatchObject({ running: 0, queued: 0 });
    expect(children(media.pid!)).toEqual([]);
  });
});

describe("the job time limit", () => {
  let quick: MediaServiceProcess;
  beforeAll(async () => {
    quick = await startMediaService({
      port: await freePort(),
      secret: SECRET,
      env: { ...MEDIA_TOOLS_ENV, JOB_TIMEOUT_MS: "1500" },
    });
  });
  afterAll(() => quick?.stop());

  it("answers 504 once a job has used its time, whatever tools it ran", async () => {
    const long = await readFile(path.join(dir, "slow.avi"));
    const start = Date.now();
    const res = await fetch(`${quick.url}/video/mp4?format=avi`, {
      method: "POST",
      headers: { Authorization: `Bearer ${SECRET}` },
      body: long,
    });
    expect(res.status).toBe(504);
    expect(((await res.json()) as { error: string }).error).toMatch(/timed out/);
    expect(Date.now() - start).toBeLessThan(6000);
  });
});

describe("outputs are bounded too", () => {
  it("refuses a conversion whose output reaches twice the largest input, rather than serve it cut short", async () => {
    // Noise at MPEG-4's coarsest quantiser: about 50 KB that H.264 at the service's quality makes more than twice as large.
    const input = await video("noise.avi", [
      "-f",
      "lavfi",
      "-i",
      "testsrc=size=320x240:rate=25:duration=4",
      "-vf",
      "noise=alls=30:allf=t",
      "-c:v",
      "mpeg4",
      "-q:v",
      "31",
    ]);
    const small = await startMediaService({
      port: await freePort(),
      secret: SECRET,
      env: { ...MEDIA_TOOLS_ENV, MAX_INPUT_BYTES: String(input.length + 1000) },
    });
    try {
      const res = await fetch(`${small.url}/video/mp4?format=avi`, {
        method: "POST",
        headers: { Authorization: `Bearer ${SECRET}` },
        body: input,
      });
      const body = (await res.json()) as { error: string };
      expect(res.status).toBe(422);
      expect(body.error).toMatch(/output reached/);
    } finally {
      await small.stop();
    }
  });
});
