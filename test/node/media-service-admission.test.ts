import http from "node:http";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { startMediaService, type MediaServiceProcess } from "../../scripts/lib/media.mjs";
import { freePort } from "../../scripts/lib/server.mjs";
import { MEDIA_TOOLS_ENV } from "../support/tools";

/**
 * The media service's admission while bodies are still arriving: a job holds its place from
 * the first byte, and the inputs on the temporary disk stay within MAX_TEMP_BYTES, with small
 * limits here: one job running, one more admitted, 4000-byte inputs, 6000 bytes in all.
 */
const SECRET = "media-admission-test-secret-0123456789";
let tmp: string;
let media: MediaServiceProcess;
const open: http.ClientRequest[] = [];

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "media-admission-"));
  media = await startMediaService({
    port: await freePort(),
    secret: SECRET,
    env: {
      ...MEDIA_TOOLS_ENV,
      MEDIA_TMP_DIR: tmp,
      MAX_CONCURRENT_JOBS: "1",
      MAX_QUEUED_JOBS: "1",
      MAX_INPUT_BYTES: "4000",
      MAX_TEMP_BYTES: "6000",
    },
  });
});
afterEach(async () => {
  for (const request of open.splice(0)) request.destroy();
  await until("the service to be idle", async () => (await readdir(tmp)).length === 0);
});
afterAll(async () => {
  await media?.stop();
  await rm(tmp, { recursive: true, force: true });
});

interface Answer {
  status: number;
  retryAfter: string | undefined;
  error: string;
}

/**
 * A job whose body is sent as `chunks` (Content-Length `length`, or chunked when null), each
 * written once the previous one was taken; `hold` leaves the body unfinished. Resolves with the
 * answer, whenever it comes, even before the body is all sent (status 0: none came).
 */
function post(length: number | null, chunks: Buffer[], { hold = false } = {}) {
  const request = http.request(`${media.url}/probe?format=mp4`, {
    method: "POST",
    headers: { Authorization: `Bearer ${SECRET}`, ...(length === null ? {} : { "Content-Length": length }) },
  });
  open.push(request);
  const answer = new Promise<Answer>((resolve) => {
    request.on("response", (res) => {
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () =>
        resolve({
          status: res.statusCode!,
          retryAfter: res.headers["retry-after"] as string | undefined,
          error: JSON.parse(text || "{}").error,
        }),
      );
    });
    // Writes cut off by an early answer fail: status 0 only if no answer came at all.
    request.on("error", (error) =>
      setTimeout(() => resolve({ status: 0, retryAfter: undefined, error: String(error) }), 1000),
    );
  });
  (async () => {
    for (const chunk of chunks) await new Promise<void>((resolve) => request.write(chunk, () => resolve()));
    if (!hold) request.end();
  })().catch(() => {});
  return answer;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Job folders on the temporary disk: one per job admitted. */
const jobsOnDisk = async () => (await readdir(tmp)).length;

it("counts jobs still receiving their input: a third job is refused at once", async () => {
  void post(1000, [Buffer.alloc(10)], { hold: true });
  void post(1000, [Buffer.alloc(10)], { hold: true });
  await until("two jobs receiving", async () => (await jobsOnDisk()) === 2);
  const third = await post(10, [Buffer.alloc(10)]);
  expect(third.status).toBe(503);
  expect(third.retryAfter).toBeTruthy();
  expect(third.error).toMatch(/too many jobs/);
  expect(await jobsOnDisk()).toBe(2);
});

it("refuses a body whose Content-Length is over what is left of MAX_TEMP_BYTES, before writing it", async () => {
  void post(4000, [Buffer.alloc(10)], { hold: true });
  await until("a job receiving", async () => (await jobsOnDisk()) === 1);
  const second = await post(3000, [Buffer.alloc(3000)]);
  expect(second.status).toBe(503);
  expect(second.retryAfter).toBeTruthy();
  expect(second.error).toMatch(/temporary space/);
  expect(await jobsOnDisk()).toBe(1);
});

it("cuts off a body without Content-Length once MAX_TEMP_BYTES is used up", async () => {
  void post(4000, [Buffer.alloc(10)], { hold: true });
  await until("a job receiving", async () => (await jobsOnDisk()) === 1);
  const chunked = await post(null, [Buffer.alloc(1000), Buffer.alloc(1000), Buffer.alloc(1000)]);
  expect(chunked.status).toBe(503);
  expect(chunked.retryAfter).toBeTruthy();
  expect(chunked.error).toMatch(/temporary space/);
});

it("admits again once the jobs ended, and leaves nothing on disk", async () => {
  const jobs = [post(4000, [Buffer.alloc(10)], { hold: true }), post(2000, [Buffer.alloc(10)], { hold: true })];
  await until("two jobs receiving", async () => (await jobsOnDisk()) === 2);
  for (const request of open.splice(0)) request.destroy();
  await Promise.allSettled(jobs);
  await until("the jobs to end", async () => (await jobsOnDisk()) === 0);
  // Both places and all the space are free again: an unreadable 4000-byte input is judged (422).
  const next = await post(4000, [Buffer.alloc(4000)]);
  expect(next.status).toBe(422);
  // Its place is given back once its files are removed, just after the answer.
  await until("the places to be free", async () => {
    const health = (await (await fetch(`${media.url}/health`)).json()) as Record<string, number>;
    return health.running === 0 && health.queued === 0 && health.receiving === 0 && health.tempBytes === 0;
  });
});
