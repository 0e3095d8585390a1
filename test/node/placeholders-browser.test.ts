import type { Browser, HTTPRequest } from "puppeteer-core";
import { launchChromium } from "./chromium";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uploadFile, useMediaTestBed } from "./server";

/**
 * An image's placeholder in Chromium (npm's, as test/node/browser.test.ts drives it): while the
 * image's requests are held, the box where it will be shows its placeholder (near the image's
 * average colour, not the page's white); once they are let through, the image shows and the
 * placeholder is taken away. On the upload page, an album's grid and the gallery.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const document: any;
type Dom = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const bed = useMediaTestBed("placeholders-browser");
let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
});

/** A photo-sized JPEG of warm colours, a gradient across and down, of a known average. */
async function warmJpeg() {
  const [width, height] = [800, 500];
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      raw[i] = 190 + Math.round((40 * x) / width);
      raw[i + 1] = 70 + Math.round((80 * y) / height);
      raw[i + 2] = 40;
    }
  return new Uint8Array(
    await sharp(raw, { raw: { width, height, channels: 3 } })
      .jpeg()
      .toBuffer(),
  );
}

const rgb = (hex: string) => [1, 3, 5].map((at) => Number.parseInt(hex.slice(at, at + 2), 16));
const distance = (a: number[], b: number[]) => Math.hypot(...a.map((v, i) => v - b[i]!));

/** The mean colour of a PNG screenshot. */
async function meanOf(png: Uint8Array) {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const sums = [0, 0, 0];
  for (let i = 0; i < data.length; i += 3) for (let c = 0; c < 3; c++) sums[c]! += data[i + c]!;
  return sums.map((sum) => sum / (info.width * info.height));
}

/** A held request let through, as the service would answer it. */
const letThrough = (request: HTTPRequest) => request.continue();

/**
 * Opens `url` with every request for the upload's image held (its file, variants, thumbnail), and
 * answers what the box of `selector` shows then, and once the requests are let through (or
 * answered as `release` answers them).
 */
async function heldThenLoaded(url: string, id: string, selector: string, release = letThrough) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  const cspErrors: string[] = [];
  page.on("console", (m) => /Content Security Policy/.test(m.text()) && cspErrors.push(m.text()));
  const held: HTTPRequest[] = [];
  let holding = true;
  const isImage = (target: string) =>
    new RegExp(`/(i|t)/${id}(/|\\?|$)`).test(new URL(target).pathname + new URL(target).search);
  await page.setRequestInterception(true);
  page.on("request", (request) => {
    if (holding && isImage(request.url())) held.push(request);
    else void request.continue();
  });
  await page.goto(url, { waitUntil: "domcontentloaded" });
  await page.waitForFunction(() => document.readyState !== "loading");
  const image = (await page.$(selector))!;
  // The pages' tiles load lazily: one below the fold (the gallery's, when other files' public
  // uploads came after it) asks for its image only once it is scrolled to.
  await image.scrollIntoView();
  for (const give = Date.now() + 10_000; held.length === 0 && Date.now() < give; )
    await new Promise((resolve) => setTimeout(resolve, 50));
  const box = (await image.boundingBox())!;
  expect(box.width).toBeGreaterThan(100);
  expect(held.length).toBeGreaterThan(0);
  const before = await meanOf(await image.screenshot());
  expect(await image.evaluate((img: Dom) => img.complete && img.naturalWidth > 0)).toBe(false);

  holding = false;
  for (const request of held.splice(0)) await release(request);
  await page.waitForFunction((img: Dom) => img.complete && img.naturalWidth > 0, { timeout: 30_000 }, image);
  await page.waitForFunction((img: Dom) => !img.hasAttribute("data-placeholder"), {}, image);
  const after = await meanOf(await image.screenshot());
  expect(cspErrors).toEqual([]);
  await page.close();
  return { before, after };
}

describe("placeholders in a browser", () => {
  it("show where the image will be until it loads, on its page, an album's grid and the gallery", async () => {
    const { server, account } = bed;
    const albumRes = await fetch(`${server.api}/albums`, {
      method: "POST",
      headers: { "X-API-Key": account.full, "Content-Type": "application/json" },
      body: JSON.stringify({ visibility: "public" }),
    });
    const album = ((await albumRes.json()) as { data: { id: string } }).data.id;
    const title = `Warm ${Date.now()}`;
    const fields = { album, title, visibility: "public" };
    const res = await uploadFile(server, account.full, await warmJpeg(), "warm.jpg", fields);
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { id: string; placeholder: string; color: string } };
    expect(data.color).toMatch(/^#[0-9a-f]{6}$/);
    const average = rgb(data.color);
    const white = [255, 255, 255];

    for (const [url, selector] of [
      [`${server.url}/v/${data.id}`, "main img"],
      [`${server.url}/a/${album}`, ".grid img"],
      // Public: among the newest, on the gallery's first page (no other test file opens it).
      [`${server.url}/gallery`, `.grid img[alt="${title}"]`],
    ] as const) {
      const { before, after } = await heldThenLoaded(url, data.id, selector);
      const shown = (mean: number[]) => `rgb(${mean.map(Math.round).join(", ")})`;
      console.log(`${url}: ${shown(before)} held, ${shown(after)} loaded; color ${data.color}`);
      // The placeholder: near the image's average colour, far from the page's white.
      expect(distance(before, average), url).toBeLessThan(25);
      expect(distance(before, white), url).toBeGreaterThan(100);
      // The image itself: the same average, within its JPEG's and resampling's error.
      expect(distance(after, average), url).toBeLessThan(25);
    }
  });

  it("falls back to the file itself when its width variant cannot be made just now", async () => {
    const { server, account } = bed;
    const res = await uploadFile(server, account.full, await warmJpeg(), "warm.jpg");
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { id: string; color: string } };
    const variants: string[] = [];
    // What a busy media service's share for variants answers (src/uploads/variants/make.ts).
    const busy = (request: HTTPRequest) => {
      if (!new URL(request.url()).searchParams.has("w")) return request.continue();
      variants.push(request.url());
      return request.respond({ status: 503, headers: { "Retry-After": "5" }, body: "busy" });
    };
    const { after } = await heldThenLoaded(`${server.url}/v/${data.id}`, data.id, "main img", busy);
    expect(variants).not.toEqual([]);
    expect(distance(after, rgb(data.color))).toBeLessThan(25);
  });
});
