import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import chromium from "@sparticuz/chromium";
import puppeteer, { type Browser, type HTTPRequest, type Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMediaService } from "../../scripts/lib/media.mjs";
import { ffmpeg, MEDIA_TOOLS_ENV } from "../support/tools";
import { freePort } from "../../scripts/lib/server.mjs";
import {
  createAccount,
  processedUpload,
  startTestServer,
  uploadFile,
  type TestAccount,
  type TestServer,
} from "./server";
import { CLIP_SECONDS, framesBetween, makeClip, meanDifference, serviceLadder, type MadeLadder } from "./video-ladder";

/**
 * A video's page plays its HLS ladder in Chromium (npm's, as test/node/browser.test.ts drives
 * it): hls.js from the lowest rung up, a seek to the middle showing the source's frame there, the
 * storyboard's tile over the seek bar, a locked video after its password, and a view-limited one
 * spending one view for a whole playback. The ladder is the media service's own: the media job's
 * where it makes ladders, else videoLadder's of the clip given to the upload through a wrapper of
 * the Worker (test/worker/ladder-seeding-worker.ts).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const document: any;
type Dom = any; // eslint-disable-line @typescript-eslint/no-explicit-any

let server: TestServer;
let stopMedia: () => Promise<void>;
let account: TestAccount;
let browser: Browser;
let dir: string;
let clip: string;
let made: MadeLadder;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "video-player-"));
  const secret = "video-player-media-secret-0123456789";
  const media = await startMediaService({ port: await freePort(), secret, env: MEDIA_TOOLS_ENV });
  stopMedia = () => media.stop();
  server = await startTestServer(
    { MEDIA_SERVICE_URL: media.url, MEDIA_SECRET: secret },
    "test/worker/ladder-seeding-worker.ts",
  );
  account = await createAccount(server, "player");
  clip = await makeClip(dir);
  made = await serviceLadder({ url: media.url, secret }, new Uint8Array(await readFile(clip)));
  browser = await puppeteer.launch({
    executablePath: await chromium.executablePath(),
    args: chromium.args,
    headless: true,
  });
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await stopMedia?.();
  if (dir) await rm(dir, { recursive: true, force: true });
});

let copies = 0;

/**
 * A processed upload of the clip with `fields`, with its ladder. Each is a copy with a comment of
 * its own: the same bytes twice would be the same upload (duplicates are answered with the first).
 * Where the upload's answer has `hls` (the media job makes ladders), the job's own ladder is
 * awaited; otherwise the media service's ladder of the clip is given to it through the wrapper.
 */
async function videoWithLadder(fields: Record<string, string> = {}) {
  const copy = path.join(dir, `copy-${++copies}.mp4`);
  await ffmpeg(["-i", clip, "-c", "copy", "-metadata", `comment=copy ${copies}`, copy]);
  const res = await uploadFile(server, account.full, new Uint8Array(await readFile(copy)), "clip.mp4", fields);
  const { data } = (await res.json()) as { data: { id: string } };
  const processed = await processedUpload<{ thumb: string | null; hls?: string | null }>(server, account.full, data.id);
  if ("hls" in processed) await ladderMade(data.id);
  else await seedLadder(data.id);
  return data.id;
}

/** GET {base_url}/{id} until the upload's answer has its `hls`: the media job stored its ladder. */
async function ladderMade(id: string) {
  for (let i = 0; i < 480; i++) {
    const res = await fetch(`${server.api}/${id}`, { headers: { "X-API-Key": account.full } });
    const { data } = (await res.json()) as { data: { hls: string | null; processing: { state: string } } };
    if (data.hls) return;
    expect(data.processing.state).not.toBe("failed");
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`upload ${id} has no ladder`);
}

/** The ladder made above, stored for the upload and named by its row (the wrapper's routes). */
async function seedLadder(id: string) {
  for (const [name, body] of made.files) {
    const put = await fetch(`${server.url}/__ladder/${id}/${name}`, { method: "PUT", body });
    expect(put.status, name).toBe(204);
  }
  const seeded = await fetch(`${server.url}/__ladder/${id}`, {
    method: "POST",
    body: JSON.stringify({ ladder: made.ladder, duration: CLIP_SECONDS }),
  });
  expect(seeded.status).toBe(204);
}

/** A page that fails the test on any script error or CSP refusal, and lists the ladder's requests. */
async function playerPage() {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  const errors: string[] = [];
  const requests: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("console", (message) => {
    if (message.type() === "error" && /Content Security Policy/.test(message.text())) errors.push(message.text());
  });
  page.on("request", (request: HTTPRequest) => {
    const url = new URL(request.url());
    if (url.pathname.startsWith("/h/")) requests.push(url.pathname.split("/").pop()!);
  });
  return { page, errors, requests };
}

const play = (page: Page) =>
  page.$eval("video", (video: Dom) => {
    video.muted = true;
    return video.play();
  });

const playedTo = (page: Page, seconds: number) =>
  page.waitForFunction((s: number) => document.querySelector("video").currentTime >= s, { timeout: 30_000 }, seconds);

describe("a video page with a ladder, in Chromium", () => {
  it("plays through hls.js from the lowest rung up, seeks to the right frame, and previews the seek bar", async () => {
    const id = await videoWithLadder();
    const { page, errors, requests } = await playerPage();
    await page.goto(`${server.url}/v/${id}`, { waitUntil: "load" });
    await page.waitForFunction(() => document.querySelector("video").dataset.player === "hls.js");
    await play(page);
    await page.waitForFunction(() => Number(document.querySelector("video").dataset.level) > 0, { timeout: 30_000 });
    const rungs = made.ladder.rungs.map((rung) => rung.media);
    const media = requests.filter((name) => rungs.includes(name));
    // The lowest rung first (the master lists the highest first), then a higher one.
    expect(media[0]).toBe(rungs[rungs.length - 1]);
    expect(media.some((name) => name !== rungs[rungs.length - 1])).toBe(true);

    const middle = CLIP_SECONDS / 2 + 0.02;
    await page.$eval(
      "video",
      (video: Dom, at: number) =>
        new Promise((resolve) => {
          video.pause();
          video.addEventListener("seeked", resolve, { once: true });
          video.currentTime = at;
        }),
      middle,
    );
    const shown = await page.$eval("video", (video: Dom) => {
      const canvas = document.createElement("canvas");
      canvas.width = 160;
      canvas.height = 90;
      const context = canvas.getContext("2d");
      context.drawImage(video, 0, 0, 160, 90);
      return Array.from(context.getImageData(0, 0, 160, 90).data as number[]);
    });
    // The frame shown is the source's at that time (within a few frames: decoders and players
    // round a seek differently), and unlike any a second or more away.
    const frames = (await framesBetween(clip, 0, CLIP_SECONDS, 160, 90)).map((frame) => ({
      time: frame.time,
      difference: meanDifference(shown, frame.rgba),
    }));
    const best = frames.reduce((a, b) => (b.difference < a.difference ? b : a));
    expect(Math.abs(best.time - middle)).toBeLessThanOrEqual(0.2);
    expect(best.difference).toBeLessThan(10);
    const far = frames.filter((frame) => Math.abs(frame.time - middle) >= 1);
    expect(Math.min(...far.map((frame) => frame.difference))).toBeGreaterThan(best.difference * 3);

    const bar = (await page.$(".scrub input"))!;
    const box = (await bar.boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.8, box.y + box.height / 2);
    const preview = await page.$eval(".preview", (tile: Dom) => ({
      hidden: tile.hidden,
      position: tile.style.backgroundPosition,
      image: tile.style.backgroundImage,
    }));
    expect(preview.hidden).toBe(false);
    // The tile of the time under the pointer, 80% of the way along.
    const board = made.ladder.storyboard!;
    const tile = Math.min(board.tiles - 1, Math.floor((0.8 * CLIP_SECONDS) / board.interval));
    const x = (tile % board.columns) * board.tileWidth;
    const y = Math.floor(tile / board.columns) * board.tileHeight;
    expect(preview.position).toBe(`${-x}px ${-y}px`);
    expect(preview.image).toContain(board.image);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("plays a locked video after its password, through signed links alone", async () => {
    const id = await videoWithLadder({ password: "open sesame" });
    const { page, errors } = await playerPage();
    await page.goto(`${server.url}/v/${id}`, { waitUntil: "load" });
    await page.type("input[type=password]", "open sesame");
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit], input[type=submit]")]);
    await page.waitForFunction(() => document.querySelector("video").dataset.player === "hls.js");
    await play(page);
    await playedTo(page, 1);
    const unsigned = await page.evaluate(
      async (master: string) => (await fetch(master)).status,
      `/h/${id}/master.m3u8`,
    );
    expect(unsigned).toBe(401);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("spends one view of a view-limited video on a whole playback", async () => {
    const id = await videoWithLadder({ max_views: "2" });
    const { page, errors, requests } = await playerPage();
    await page.goto(`${server.url}/v/${id}`, { waitUntil: "load" });
    await play(page);
    await playedTo(page, 2);
    await page.$eval("video", (video: Dom) => {
      video.currentTime = 6;
    });
    await playedTo(page, 7);
    expect(requests.filter((name) => name.endsWith(".mp4")).length).toBeGreaterThan(2);
    expect(errors).toEqual([]);
    await page.close();
    // One view left: the file once, then no more.
    expect((await fetch(`${server.url}/i/${id}`)).status).toBe(200);
    expect((await fetch(`${server.url}/i/${id}`)).status).toBe(410);
  });
});
