import { readFileSync, readdirSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startMediaService, type MediaServiceProcess } from "../../scripts/lib/media.mjs";
import { freePort } from "../../scripts/lib/server.mjs";
import { ffmpeg, ffprobe, MEDIA_TOOLS_ENV } from "../support/tools";
import { createAccount, startTestServer, uploadFile, type TestServer } from "./server";

const SECRET = "video-retry-test-secret";

let dir: string;
let video: Uint8Array;
/** The upload of the first test, whose ladder the second test's service dies in the middle of. */
let uploaded: { id: string; key: string };
let mediaPort: number;
let media: MediaServiceProcess | null = null;
let server: TestServer;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "video-retry-"));
  // Long enough that the conversion is still running when the service is killed.
  const file = path.join(dir, "long.avi");
  await ffmpeg([
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=960x540:rate=25:duration=8",
    "-f",
    "lavfi",
    "-i",
    "sine=duration=8",
    "-c:v",
    "mpeg4",
    "-q:v",
    "5",
    "-c:a",
    "mp3",
    "-shortest",
    file,
  ]);
  video = new Uint8Array(await readFile(file));
  mediaPort = await freePort();
  media = await startMediaService({ port: mediaPort, secret: SECRET, env: MEDIA_TOOLS_ENV });
  server = await startTestServer({ MEDIA_SERVICE_URL: media.url, MEDIA_SECRET: SECRET, MEDIA_RETRY_SECONDS: "1" });
});

afterAll(async () => {
  await media?.stop();
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

/** The processes a process started, from /proc (Linux). */
function children(pid: number): number[] {
  const tasks = `/proc/${pid}/task`;
  return readdirSync(tasks).flatMap((task) =>
    readFileSync(`${tasks}/${task}/children`, "utf8").split(" ").filter(Boolean).map(Number),
  );
}

/** Like a container dying: the service and the ffmpeg it started go at once. */
function killMediaService(service: MediaServiceProcess) {
  for (const child of children(service.pid)) {
    try {
      process.kill(child, "SIGKILL");
    } catch {}
  }
  service.process.kill("SIGKILL");
}

it("finishes a conversion whose media service died mid-job, serving the original meanwhile", async () => {
  const account = await createAccount(server, "retry");
  const res = await uploadFile(server, account.full, video, "long.avi");
  expect(res.status).toBe(200);
  const { data } = (await res.json()) as { data: { id: string; src: string; path: string } };
  uploaded = { id: data.id, key: account.full };

  // The conversion started right after the response; kill the service while it runs.
  await until("the conversion to start", async () => {
    const health = (await (await fetch(`${media!.url}/health`)).json()) as { running: number };
    return health.running > 0 ? true : undefined;
  });
  killMediaService(media!);
  media = null;

  // The original stays served, whole.
  const during = await fetch(data.src);
  expect(during.headers.get("Content-Type")).toBe("video/x-msvideo");
  expect(new Uint8Array(await during.arrayBuffer())).toEqual(video);

  media = await startMediaService({ port: mediaPort, secret: SECRET, env: MEDIA_TOOLS_ENV });
  // The job's runner tries again once its (1 s) retry delay has passed, by itself: the cron job
  // never runs here.
  const converted = await until("the retried conversion", async () => {
    const upload = await fetch(`${server.api}/${data.id}`, { headers: { "X-API-Key": account.full } });
    const body = (await upload.json()) as {
      data: { path: string; width: number; height: number; thumb: string | null };
    };
    return body.data.path.endsWith(".mp4") ? body.data : undefined;
  });
  expect(converted).toMatchObject({ width: 960, height: 540 });
  expect(converted.thumb).toMatch(/\.webp$/);

  const after = await fetch(data.src);
  expect(after.headers.get("Content-Type")).toBe("video/mp4");
  const out = path.join(dir, "served.mp4");
  await writeFile(out, new Uint8Array(await after.arrayBuffer()));
  const streams = ffprobe(["-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", out]);
  expect(streams).toContain("h264,960,540");
  expect(streams).toContain("aac");
  // The old path now leads to the converted file.
  const old = await fetch(data.path, { redirect: "manual" });
  expect(old.status).toBe(302);
});

interface Answer {
  hls: string | null;
  rungs: unknown[] | null;
  processing: { state: string; percent: number | null };
}

it("makes the ladder of that video again when its media service dies midway, with no half of it ever shown", async () => {
  // The converted video's job went on to its ladder (4 rungs of 540p and below).
  const { id, key } = uploaded;
  const read = async () =>
    (
      (await (await fetch(`${server.api}/${id}`, { headers: { "X-API-Key": key } })).json()) as {
        data: Answer;
      }
    ).data;
  // Past the file's phase (30 %), the ladder's call running: kill the service.
  await until("the ladder to start", async () => {
    const answer = await read();
    if (!(answer.processing.state === "running" && (answer.processing.percent ?? 0) >= 30)) return undefined;
    const health = (await (await fetch(`${media!.url}/health`)).json()) as { running: number };
    return health.running > 0 ? true : undefined;
  });
  killMediaService(media!);
  media = null;
  expect(await read()).toMatchObject({ hls: null, rungs: null });

  media = await startMediaService({ port: mediaPort, secret: SECRET, env: MEDIA_TOOLS_ENV });
  // The runner comes back at the ladder (the file is done), and names it only once it is whole.
  const seen: Answer[] = [];
  const ready = await until(
    "the retried ladder",
    async () => {
      const answer = await read();
      seen.push(answer);
      return answer.processing.state === "ready" ? answer : undefined;
    },
    180_000,
  );
  expect(ready.hls).toMatch(new RegExp(`/h/${id}/master\\.m3u8$`));
  expect(ready.rungs!.length).toBeGreaterThan(1);
  for (const answer of seen) if (answer.processing.state !== "ready") expect(answer.hls).toBeNull();
  const jobs = seen.map((a) => a.processing.state);
  expect(jobs).not.toContain("failed");
}, 240_000);
