import { readFile } from "node:fs/promises";
import type { Browser, HTTPRequest, Page } from "puppeteer-core";
import { launchChromium } from "./chromium";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uploadFile, useMediaTestBed } from "./server";
import { CLIP_SECONDS, framesBetween, makeClip, meanDifference } from "./video-ladder";

/**
 * A video's page plays its HLS ladder in Chromium (npm's, as test/node/browser.test.ts drives
 * it): hls.js from the lowest rung up, a seek to the middle showing the source's frame there, the
 * storyboard's tile over the seek bar, a locked video after its password, and a view-limited one
 * spending one view for a whole playback. Each ladder is the media job's own, on the shared dev
 * server with a media service.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const document: any;
type Dom = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const bed = useMediaTestBed("video-player");
let browser: Browser;
let clip: string;
/** The one video the tests play: open, then locked, then view-limited (a ladder made once). */
let video: Played;

beforeAll(async () => {
  [clip, browser] = await Promise.all([makeClip(bed.dir), launchChromium()]);
  video = await videoWithLadder();
});

afterAll(async () => {
  await browser?.close();
});

interface Played {
  id: string;
  hls: string;
  storyboard: string | null;
  rungs: { name: string }[];
}

/** The clip uploaded, once its media job stored its ladder. */
async function videoWithLadder(): Promise<Played> {
  const { server, account } = bed;
  const res = await uploadFile(server, account.full, new Uint8Array(await readFile(clip)), "clip.mp4");
  const { data } = (await res.json()) as { data: { id: string } };
  for (let i = 0; i < 480; i++) {
    const answer = await fetch(`${server.api}/${data.id}`, { headers: { "X-API-Key": account.full } });
    const { data: upload } = (await answer.json()) as { data: Played & { processing: { state: string } } };
    if (upload.hls) return upload;
    expect(upload.processing.state).not.toBe("failed");
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`upload ${data.id} has no ladder`);
}

/** PATCH {base_url}/{id}: the video's password or view limit changed (its files, ladder too, moved with it). */
async function change(fields: Record<string, unknown>) {
  const res = await fetch(`${bed.server.api}/${video.id}`, {
    method: "PATCH",
    headers: { "X-API-Key": bed.account.full, "Content-Type": "application/json" },
    body: JSON.stringify(fields),
  });
  expect(res.status).toBe(200);
  return video.id;
}

/** The sprite and the offsets of the storyboard's tile at `seconds`, as its WebVTT file says. */
async function tileAt(storyboard: string, seconds: number) {
  const vtt = await (await fetch(storyboard)).text();
  const time = (text: string) => text.split(":").reduce((sum, part) => sum * 60 + Number(part), 0);
  for (const cue of vtt.split(/\n\n+/)) {
    const timing = /^([\d:.]+) --> ([\d:.]+)\n(.+)$/m.exec(cue);
    if (!timing || seconds < time(timing[1]!) || seconds >= time(timing[2]!)) continue;
    const [image, fragment] = timing[3]!.split("#xywh=");
    const [x, y] = fragment!.split(",").map(Number);
    return { image: image!, x: x!, y: y! };
  }
  throw new Error(`no storyboard cue at ${seconds} s`);
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

/**
 * The page played until hls.js has moved above the lowest rung. It starts there and moves up once
 * a fragment has come fast enough; on a machine whose cores other test files hold, the first
 * fragments can come so slowly that the whole 8 s clip is fetched at the lowest rung. A fresh
 * page (a new bandwidth estimate) is then tried once more.
 */
async function playedUp(attempts = 2): Promise<Awaited<ReturnType<typeof playerPage>>> {
  const player = await playerPage();
  const { page } = player;
  await page.goto(`${bed.server.url}/v/${video.id}`, { waitUntil: "load" });
  await page.waitForFunction(() => document.querySelector("video").dataset.player === "hls.js");
  await play(page);
  try {
    await page.waitForFunction(() => Number(document.querySelector("video").dataset.level) > 0, { timeout: 30_000 });
    return player;
  } catch (error) {
    await page.close();
    if (attempts <= 1) throw error;
    return playedUp(attempts - 1);
  }
}

describe("a video page with a ladder, in Chromium", () => {
  it("plays through hls.js from the lowest rung up, seeks to the right frame, and previews the seek bar", async () => {
    const { page, errors, requests } = await playedUp();
    const rungs = video.rungs.map((rung) => `${rung.name}.mp4`);
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
    const tile = await tileAt(video.storyboard!, 0.8 * CLIP_SECONDS);
    expect(preview.position).toBe(`${-tile.x}px ${-tile.y}px`);
    expect(preview.image).toContain(tile.image);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("plays a locked video after its password, through signed links alone", async () => {
    const id = await change({ password: "open sesame" });
    const { page, errors } = await playerPage();
    await page.goto(`${bed.server.url}/v/${id}`, { waitUntil: "load" });
    await page.type("input[type=password]", "open sesame");
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit], input[type=submit]")]);
    await page.waitForFunction(() => document.querySelector("video").dataset.player === "hls.js");
    await play(page);
    await playedTo(page, 1);
    const unsigned = await page.evaluate(
      // The open video's master may sit in the browser's cache (max-age): the server is asked.
      async (master: string) => (await fetch(master, { cache: "no-store" })).status,
      `/h/${id}/master.m3u8`,
    );
    expect(unsigned).toBe(401);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("spends one view of a view-limited video on a whole playback", async () => {
    const id = await change({ password: null, max_views: 2 });
    const { page, errors, requests } = await playerPage();
    await page.goto(`${bed.server.url}/v/${id}`, { waitUntil: "load" });
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
    expect((await fetch(`${bed.server.url}/i/${id}`)).status).toBe(200);
    expect((await fetch(`${bed.server.url}/i/${id}`)).status).toBe(410);
  });
});
