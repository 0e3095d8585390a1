import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startMediaService, type MediaServiceProcess } from "../../scripts/lib/media.mjs";
import { freePort } from "../../scripts/lib/server.mjs";
import { callHeaders, callPath } from "../../container/src/contract";
import { CALL_ID_HEADER, progressPath, readProgress } from "../../container/src/progress-contract";
import { ffmpeg, MEDIA_TOOLS_ENV } from "../support/tools";

/**
 * A named call's progress (container/src/progress-contract.ts): while ffmpeg converts, GET
 * /progress/{id} answers the share of the video written so far, rising, then 100 once done,
 * kept a while past the answer; only with the secret, and 404 for a call it does not know.
 */
const SECRET = "media-progress-test-secret-0123456789";
let dir: string;
let media: MediaServiceProcess;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "media-progress-"));
  media = await startMediaService({ port: await freePort(), secret: SECRET, env: MEDIA_TOOLS_ENV });
});
afterAll(async () => {
  await media?.stop();
  await rm(dir, { recursive: true, force: true });
});

const progressOf = (id: string, secret = SECRET) =>
  fetch(`${media.url}${progressPath(id)}`, { headers: { Authorization: `Bearer ${secret}` } });

it("answers a conversion's progress while it runs, rising to 100, to the secret's holder only", async () => {
  // Two minutes of a small picture: many frames, quickly made, and a conversion of a second or
  // two, over which ffmpeg reports every half second.
  const file = path.join(dir, "long.avi");
  await ffmpeg(["-f", "lavfi", "-i", "testsrc=size=160x120:rate=25:duration=120", "-c:v", "mpeg4", file]);
  const input = new Uint8Array(await readFile(file));
  const id = crypto.randomUUID();
  expect((await progressOf(id)).status).toBe(404);

  const seen: number[] = [];
  const call = fetch(`${media.url}${callPath({ operation: "videoToMp4", format: "avi" })}`, {
    method: "POST",
    headers: { ...callHeaders(SECRET, input.length), [CALL_ID_HEADER]: id },
    body: input,
  }).then(async (res) => {
    await res.arrayBuffer();
    return res.status;
  });
  let status: number | null = null;
  void call.then((s) => (status = s));
  while (status === null) {
    const res = await progressOf(id);
    const text = await res.text();
    const percent = res.ok ? readProgress(text) : null;
    if (percent !== null) seen.push(percent);
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(status).toBe(200);
  expect(seen.some((p) => p > 0 && p < 100)).toBe(true);
  expect(seen).toEqual([...seen].sort((a, b) => a - b));
  // Done: its last figure stays for a poll that comes after the answer left.
  expect(readProgress(await (await progressOf(id)).text())).toBe(100);
  expect((await progressOf(id, "wrong-secret")).status).toBe(401);
  console.log(JSON.stringify({ progressFigures: seen.filter((p, i) => p !== seen[i - 1]) }));
});

it("answers a ladder's progress too, rising to 100", async () => {
  const file = path.join(dir, "long.mp4");
  const picture = ["-f", "lavfi", "-i", "testsrc=size=160x120:rate=25:duration=90"];
  await ffmpeg([...picture, "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", file]);
  const input = new Uint8Array(await readFile(file));
  const id = crypto.randomUUID();
  const call = { operation: "videoLadder", format: "mp4", maxBytes: 50 * input.length } as const;
  const seen: number[] = [];
  let status: number | null = null;
  void fetch(`${media.url}${callPath(call)}`, {
    method: "POST",
    headers: { ...callHeaders(SECRET, input.length), [CALL_ID_HEADER]: id },
    body: input,
  }).then(async (res) => {
    await res.arrayBuffer();
    status = res.status;
  });
  while (status === null) {
    const res = await progressOf(id);
    const text = await res.text();
    const percent = res.ok ? readProgress(text) : null;
    if (percent !== null) seen.push(percent);
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(status).toBe(200);
  expect(seen.some((p) => p > 0 && p < 100)).toBe(true);
  expect(seen).toEqual([...seen].sort((a, b) => a - b));
  expect(readProgress(await (await progressOf(id)).text())).toBe(100);
});
