import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { randomFillSync } from "node:crypto";
import type { Browser, Page } from "puppeteer-core";
import { launchChromium } from "./chromium";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ihdr, ONE_PIXEL_IDAT, pngChunk, pngFile } from "../support/build";
import { sizedPng } from "../support/png";
import { ffmpeg } from "../support/tools";
import {
  createAccount,
  fixture,
  fixturePath,
  processedUpload,
  startWithMediaService,
  uploadFile,
  type MediaTestBed,
} from "./server";

/**
 * The site in a real browser: headless Chromium from npm (@sparticuz/chromium, driven by
 * puppeteer-core) against wrangler dev and the media service. Screenshots of every page at a
 * phone's and a desktop's width go to test/artifacts/screenshots/, and each page's weight and
 * first paint to test/artifacts/page-weights.json.
 */
/** What the callbacks run in the page see (this project's types are the Workers', not the DOM's). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const document: any,
  window: any,
  navigator: any,
  localStorage: any,
  HTMLAnchorElement: any,
  DataTransfer: any,
  DragEvent: any,
  ClipboardEvent: any;
type Dom = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const ARTIFACTS = path.resolve(import.meta.dirname, "../artifacts");
const SHOTS = path.join(ARTIFACTS, "screenshots");
const WIDTHS = {
  phone: { width: 390, height: 844, isMobile: true, deviceScaleFactor: 2 },
  desktop: { width: 1280, height: 800, deviceScaleFactor: 1 },
};

let bed: MediaTestBed;
let browser: Browser;
const weights: Record<string, { bytes: number; requests: number; firstPaintMs: number | null }> = {};

beforeAll(async () => {
  await mkdir(SHOTS, { recursive: true });
  bed = await startWithMediaService("browser");
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await bed?.stop();
  await writeFile(path.join(ARTIFACTS, "page-weights.json"), `${JSON.stringify(weights, null, 2)}\n`);
});

async function newPage(width: keyof typeof WIDTHS = "desktop"): Promise<Page> {
  // One context for all: the packaged Chromium runs as a single process, which other contexts crash.
  await browser.defaultBrowserContext().overridePermissions(bed.server.url, ["clipboard-read", "clipboard-write"]);
  const page = await browser.newPage();
  await page.setViewport(WIDTHS[width]);
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("console", (message) => {
    // A CSP refusal shows up here: the pages must never need one.
    if (message.type() === "error" && /Content Security Policy/.test(message.text())) errors.push(message.text());
  });
  (page as Page & { errors: string[] }).errors = errors;
  return page;
}
const errorsOf = (page: Page) => (page as Page & { errors: string[] }).errors;

/** Screenshots at both widths, and the page's weight and first paint at desktop width. */
async function record(name: string, url: string, prepare: (page: Page) => Promise<void> = async () => {}) {
  for (const width of ["phone", "desktop"] as const) {
    const page = await newPage(width);
    const loaded: Promise<number>[] = [];
    page.on("requestfinished", (request) =>
      loaded.push(
        request
          .response()
          ?.buffer()
          .then(
            (body) => body.length,
            () => 0,
          ) ?? Promise.resolve(0),
      ),
    );
    await page.goto(url, { waitUntil: "networkidle0" });
    await prepare(page);
    await page.screenshot({ path: path.join(SHOTS, `${name}-${width}.png`), fullPage: true });
    if (width === "desktop") {
      const sizes = await Promise.all(loaded);
      const firstPaintMs = await page.evaluate(() => {
        const timing = (globalThis as Dom).performance;
        const paint = timing.getEntriesByName("first-contentful-paint")[0] ?? timing.getEntriesByName("first-paint")[0];
        return paint ? Math.round(paint.startTime) : null;
      });
      weights[name] = { bytes: sizes.reduce((a, b) => a + b, 0), requests: sizes.length, firstPaintMs };
    }
    expect(errorsOf(page), name).toEqual([]);
    await page.close();
  }
}

/** The uploader with nothing remembered from an earlier test. */
async function openUploader(page: Page) {
  await page.goto(`${bed.server.url}/upload`, { waitUntil: "networkidle0" });
  await page.evaluate(() => localStorage.clear());
  await page.reload({ waitUntil: "networkidle0" });
}

/** The shares of each upload the uploader reports as it goes (its upload-progress events). */
const watchProgress = (page: Page) =>
  page.evaluate(() => {
    window.progress = [];
    document.addEventListener("upload-progress", (e: Dom) => window.progress.push(e.detail));
  });
const progressOf = (page: Page) => page.evaluate((): number[] => window.progress);

/** The size of the service's pieces, and of the uploader's tus PATCHes. */
const PIECE = 5 * 1024 * 1024;

interface TusRequest {
  method: string;
  path: string;
  /** The request's Upload-Offset (PATCH), or null. */
  offset: number | null;
  /** Its answer's status and Upload-Offset, once answered; a request that failed has status 0. */
  status?: number;
  answered?: number | null;
}

/** The requests the page sends to /api/tus, as they go. */
function watchTus(page: Page) {
  const sent: TusRequest[] = [];
  const byRequest = new Map<unknown, TusRequest>();
  const offsetOf = (value: string | undefined) => (value === undefined ? null : Number(value));
  page.on("request", (request) => {
    const url = new URL(request.url());
    if (!url.pathname.startsWith("/api/tus")) return;
    const entry = {
      method: request.method(),
      path: url.pathname,
      offset: offsetOf(request.headers()["upload-offset"]),
    };
    byRequest.set(request, entry);
    sent.push(entry);
  });
  page.on("response", (response) => {
    const entry = byRequest.get(response.request());
    if (!entry) return;
    entry.status = response.status();
    entry.answered = offsetOf(response.headers()["upload-offset"]);
  });
  page.on("requestfailed", (request) => {
    const entry = byRequest.get(request);
    if (entry) entry.status = 0;
  });
  return sent;
}

/** The uploads tus-js-client remembers in this browser for resuming. */
const tusEntries = (page: Page) =>
  page.evaluate(() => Object.keys(localStorage).filter((key: string) => key.startsWith("tus::")));

/** A valid PNG of `bytes` bytes whose pixel data is noise the service never decodes on upload. */
const largePng = (bytes: number) => sizedPng(bytes, (data) => randomFillSync(data));

describe("the browser uploader", () => {
  it("uploads a file chosen with the picker, with progress and copyable links, and lists the user's uploads", async () => {
    const account = await createAccount(bed.server, "picker");
    const page = await newPage();
    await openUploader(page);
    await page.type("#key", account.full);
    await page.click("#remember");
    await watchProgress(page);
    const input = await page.$("#files");
    await input!.uploadFile(fixturePath("gps/DSCN0010.jpg"));
    await page.waitForSelector("#results li[data-id] input", { timeout: 30_000 });
    const progress = await progressOf(page);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.at(-1)).toBe(1);
    expect(await page.$eval("#results progress", (bar: Dom) => bar.value)).toBe(1);

    const src = await page.$eval("#results li input", (field: Dom) => field.value);
    expect(src).toMatch(new RegExp(`^${bed.server.url}/i/[0-9A-Za-z]{10}$`));
    await page.click("#results li button[data-copy]");
    // The button says so once the clipboard's write has resolved; read before, it may still be empty.
    // Watched for the change itself (it says so for 2 s only): a busy machine may draw no frame meanwhile.
    await page.waitForFunction(() => document.querySelector("#results li button[data-copy]").textContent === "Copied", {
      polling: "mutation",
    });
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(src);

    // The key is remembered in this browser only, and a full key lists the account's uploads.
    expect(await page.evaluate(() => localStorage.getItem("media-host.key"))).toBe(account.full);
    await page.reload({ waitUntil: "networkidle0" });
    expect(await page.$eval("#key", (k: Dom) => k.value)).toBe(account.full);
    await page.waitForSelector("#mine:not([hidden]) #mine-list li");
    // The account's usage (GET /api/usage), no quota set: no "of" to show.
    await page.waitForFunction(() =>
      /^Used: \d+\.\d MB, 1 uploads\.$/.test(document.getElementById("usage")!.textContent!),
    );
    const id = src.split("/").pop()!;
    page.on("dialog", (dialog) => void dialog.accept());
    await page.click(`#mine-list li[data-id="${id}"] button`);
    await page.waitForFunction((gone: string) => !document.querySelector(`#mine-list li[data-id="${gone}"]`), {}, id);
    expect((await fetch(src)).status).toBe(404);
    expect(errorsOf(page)).toEqual([]);
    await page.screenshot({ path: path.join(SHOTS, "uploader-done-desktop.png"), fullPage: true });
    await page.close();
  });

  it("uploads files dropped on it and pasted into it, with the options set", async () => {
    const account = await createAccount(bed.server, "drop");
    const page = await newPage("phone");
    await openUploader(page);
    await page.type("#key", account.upload);
    await page.type("#title", "Dropped");
    await page.select("#visibility", "public");
    const png = Array.from(await fixture("pngsuite/basn2c08.png"));
    await page.evaluate((bytes) => {
      const file = new File([new Uint8Array(bytes)], "dropped.png", { type: "image/png" });
      const transfer = new DataTransfer();
      transfer.items.add(file);
      const drop = document.getElementById("drop");
      drop.dispatchEvent(new DragEvent("dragover", { dataTransfer: transfer, bubbles: true, cancelable: true }));
      drop.dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
      const pasted = new DataTransfer();
      pasted.items.add(new File([new Uint8Array(bytes)], "", { type: "image/png" }));
      document.dispatchEvent(new ClipboardEvent("paste", { clipboardData: pasted, bubbles: true, cancelable: true }));
    }, png);
    await page.waitForFunction(() => document.querySelectorAll("#results li[data-id]").length === 2, {
      timeout: 30_000,
    });
    const ids = await page.$$eval("#results li[data-id]", (items: Dom[]) =>
      items.map((item: Dom) => item.getAttribute("data-id")),
    );
    for (const id of ids) {
      const page = await (await fetch(`${bed.server.url}/v/${id}`)).text();
      expect(page).toContain("<title>Dropped</title>");
    }
    // The upload-only key cannot list: no list shown.
    expect(await page.$eval("#mine", (s: Dom) => s.hidden)).toBe(true);
    await page.screenshot({ path: path.join(SHOTS, "uploader-done-phone.png"), fullPage: true });
    await page.close();
  });

  /**
   * One file over 90 MB (the size from which the page goes over tus) for both: sending it in 5 MiB
   * PATCHes, and resuming it after a dropped connection and after a reload. Each such file costs
   * the run about 10 s of CPU (the browser, wrangler's proxy, the Worker storing 19 pieces, the
   * media service reading it); the two tests that each sent one are this one.
   */
  it("sends a file over 90 MB over tus in 5 MiB PATCHes, resuming it by itself after the connection drops, and after a reload when the file is chosen again", async () => {
    const account = await createAccount(bed.server, "tus");
    const file = path.join(bed.dir, "large.png");
    const bytes = largePng(95 * 1000 * 1000);
    await writeFile(file, bytes);
    const page = await newPage();
    await openUploader(page);
    await page.type("#key", account.upload);
    await page.click("#remember");
    await page.type("#title", "Large");
    await page.click("#keep-original");
    await watchProgress(page);
    const sent = watchTus(page);
    /**
     * Among the requests after the first `from`: the HEAD that told where to resume (those before it
     * may have failed while the connection came back: HEADs, retried), and the PATCH that did.
     */
    const resumption = (from: number) => {
      const after = sent.slice(from);
      const at = after.findIndex((r) => r.method === "HEAD" && r.status === 200);
      expect(after.slice(0, at + 1).map((r) => r.method)).toEqual(Array(at + 1).fill("HEAD"));
      return { head: after[at]!, patch: after.slice(at).find((r) => r.method === "PATCH")! };
    };
    await (await page.$("#files"))!.uploadFile(file);

    // The connection drops while the upload is under way (a PATCH fails): the upload waits, then
    // asks the service where it stands once the browser is back online, and goes on from there.
    await page.waitForFunction(() => window.progress.some((share: number) => share > 0.2), { timeout: 60_000 });
    await page.setOfflineMode(true);
    await page.waitForFunction(() => document.querySelector("#results li span").textContent.includes("waiting"));
    expect(sent.filter((r) => r.method === "PATCH" && r.status === 0)).toHaveLength(1);
    const offline = sent.length;
    await page.setOfflineMode(false);
    await page.waitForFunction(() => window.progress.some((share: number) => share > 0.5), { timeout: 60_000 });
    const afterDrop = resumption(offline);
    expect(afterDrop.head.answered).toBeGreaterThan(0);
    expect(afterDrop.patch.offset).toBe(afterDrop.head.answered);
    // Its progress went up as the PATCHes went.
    expect((await progressOf(page)).filter((share) => share > 0.1 && share < 0.9).length).toBeGreaterThan(5);

    // The page is reloaded mid-upload; the same file chosen again resumes from the service's offset.
    await page.reload({ waitUntil: "networkidle0" });
    expect(await tusEntries(page)).toHaveLength(1);
    const reloaded = sent.length;
    await watchProgress(page);
    await (await page.$("#files"))!.uploadFile(file);
    await page.waitForSelector("#results li[data-id] input, #results li .error", { timeout: 110_000 });
    expect(await page.$eval("#results li span", (s: Dom) => s.textContent)).toBe(" done");
    const afterReload = resumption(reloaded);
    expect(afterReload.head.answered).toBeGreaterThanOrEqual(afterDrop.patch.offset! + PIECE);
    expect(afterReload.patch.offset).toBe(afterReload.head.answered);
    expect((await progressOf(page))[0]).toBeGreaterThan(0.4);

    // One creation; then PATCHes each starting where the last one ended, 5 MiB apart (from 0, and
    // from where each HEAD said to resume), the last ending the file; no pieces.
    expect(sent.filter((r) => r.method === "POST").map((r) => r.path)).toEqual(["/api/tus"]);
    let next: number | null | undefined = 0;
    for (const request of sent) {
      if (request.method === "HEAD" && request.status === 200) next = request.answered;
      if (request.method !== "PATCH") continue;
      expect(request.offset).toBe(next);
      next = request.offset! + PIECE;
    }
    expect(sent.filter((r) => r.method === "PATCH").at(-1)?.answered).toBe(bytes.length);
    const src = await page.$eval("#results li input", (field: Dom) => field.value);
    const head = await fetch(src, { method: "HEAD" });
    expect(Number(head.headers.get("Content-Length"))).toBe(bytes.length);
    // The page's options went as Upload-Metadata; the finishing answer's delete link is shown.
    const id = await page.$eval("#results li[data-id]", (item: Dom) => item.getAttribute("data-id"));
    const { data } = (await (
      await fetch(`${bed.server.url}/api/${id}`, { headers: { "X-API-Key": account.full } })
    ).json()) as {
      data: { title: string };
    };
    expect(data.title).toBe("Large");
    const links = await page.$$eval("#results li .share label", (labels: Dom[]) =>
      labels.map((l: Dom) => l.textContent),
    );
    expect(links).toContain("Delete link (keep it private)");
    // A finished upload is no longer remembered for resuming.
    expect(await tusEntries(page)).toEqual([]);
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });

  it("offers a ShareX uploader and a shell snippet for the key", async () => {
    const account = await createAccount(bed.server, "tools");
    const page = await newPage();
    await openUploader(page);
    await page.type("#key", account.upload);
    for (const id of ["#snippet", "#typora"]) {
      const command = await page.$eval(id, (s: Dom) => s.value);
      expect(command).toContain(`X-API-Key: ${account.upload}`);
      expect(command).toContain(`${bed.server.url}/api`);
    }
    const sxcu = await page.evaluate(async () => {
      let file: Dom = null;
      const urls = URL as Dom;
      const original = urls.createObjectURL;
      urls.createObjectURL = (blob: Dom) => {
        file = blob;
        return "about:blank";
      };
      document.getElementById("sxcu").click();
      urls.createObjectURL = original;
      return file.text();
    });
    const config = JSON.parse(sxcu);
    expect(config).toMatchObject({
      RequestMethod: "POST",
      RequestURL: `${bed.server.url}/api`,
      Headers: { "X-API-Key": account.upload },
      Body: "MultipartFormData",
      FileFormName: "uploads",
      URL: "{json:data.src}",
    });
    // What ShareX would send, and the link it would read from the answer.
    const form = new FormData();
    form.append(config.FileFormName, new Blob([await fixture("pngsuite/basn2c08.png")]), "screenshot.png");
    const res = await fetch(config.RequestURL, { method: config.RequestMethod, headers: config.Headers, body: form });
    const answer = (await res.json()) as { data: { src: string } };
    expect(answer.data.src).toMatch(/\/i\/[0-9A-Za-z]{10}$/);
    await page.close();
  });
});

describe("the pages in a browser", () => {
  it("shows an image's page with its share options, at phone and desktop widths", async () => {
    const res = await uploadFile(bed.server, bed.account.full, await fixture("gps/DSCN0010.jpg"), "hillside.jpg", {
      title: "Hillside in autumn",
      description: "Houses among pines and vines.",
      visibility: "public",
    });
    const { data } = (await res.json()) as { data: { direct: string; src: string } };
    await record("image-page", data.direct, async (page) => {
      // What a visitor sees: the title, the description, the photo drawn, and the links to copy.
      const shown = await page.evaluate(() => {
        const document = (globalThis as Dom).document;
        const image = document.querySelector("main img") ?? document.querySelector("img");
        const shares = [...document.querySelectorAll(".share")].map((share: Dom) => ({
          name: share.querySelector("label")?.textContent,
          value: share.querySelector("input")?.value,
        }));
        return {
          heading: document.querySelector("h1")?.textContent,
          text: document.body.textContent,
          drawnWidth: image?.naturalWidth ?? 0,
          shares,
        };
      });
      expect(shown.heading).toBe("Hillside in autumn");
      expect(shown.text).toContain("Houses among pines and vines.");
      expect(shown.drawnWidth).toBeGreaterThan(0);
      const shares = Object.fromEntries(shown.shares.map((share: Dom) => [share.name, share.value]));
      expect(Object.values(shares)).toContain(data.direct);
      expect(Object.values(shares)).toContain(data.src);
      expect(shares.Markdown).toBe(`![Hillside in autumn](${data.src})`);
    });
    await record("upload", `${bed.server.url}/upload`);
  });

  it("loads a phone-sized variant from the image's srcset, not the original", async () => {
    // A 12 MP photo, kept as sent: the page's src is the camera's file.
    const photo = await sharp(fixturePath("gps/DSCN0010.jpg")).resize(4000, 3000).jpeg({ quality: 90 }).toBuffer();
    const res = await uploadFile(bed.server, bed.account.full, new Uint8Array(photo), "wide.jpg", {
      visibility: "public",
      keep_original: "1",
    });
    const { data } = (await res.json()) as { data: { direct: string; src: string } };
    const page = await newPage("phone");
    let images: { url: string; status: number; type: string | undefined; bytes: number; retryAfter?: string }[] = [];
    page.on("response", async (response) => {
      // The placeholder painted behind the image is a data: URL, not a request to the service.
      if (response.request().resourceType() !== "image" || response.url().startsWith("data:")) return;
      const bytes = (await response.buffer().catch(() => Buffer.alloc(0))).length;
      const headers = response.headers();
      images.push({
        url: response.url(),
        status: response.status(),
        type: headers["content-type"],
        bytes,
        retryAfter: headers["retry-after"],
      });
    });
    await page.goto(data.direct, { waitUntil: "networkidle0" });
    // The media service may be making other variants: its share for variants is bounded, so the
    // making is then refused with a 503 and Retry-After (make.ts). The page then shows the file
    // itself (page.js drops the srcset of an image that failed), and the test loads the page
    // again when the answer says, as a reader would.
    for (let tries = 0; images[0]?.status === 503 && tries < 5; tries++) {
      await new Promise((r) => setTimeout(r, Number(images[0]!.retryAfter ?? 5) * 1000));
      images = [];
      await page.reload({ waitUntil: "networkidle0" });
    }
    const current = await page.$eval("main img", (img: Dom) => img.currentSrc);
    // 390 CSS px less the margins, at 2 device pixels per CSS pixel: the 960 px copy.
    expect(current).toBe(`${data.src}?w=960`);
    expect(images.map((image) => [image.url, image.status])).toEqual([[current, 200]]);
    expect(images[0]!.type).toBe("image/avif");
    expect(images[0]!.bytes).toBeLessThan(photo.length / 10);
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  });

  it("plays a video's first second, poster first", async () => {
    const clip = path.join(bed.dir, "clip.webm");
    await ffmpeg([
      "-y",
      "-f",
      "lavfi",
      "-i",
      "testsrc=size=320x240:rate=25:duration=2",
      "-c:v",
      "libvpx",
      "-b:v",
      "300k",
      clip,
    ]);
    const res = await uploadFile(
      bed.server,
      bed.account.full,
      new Uint8Array(await import("node:fs/promises").then((fs) => fs.readFile(clip))),
      "clip.webm",
      { title: "Test card" },
    );
    const uploaded = (await res.json()) as { data: { id: string } };
    const data = await processedUpload<{ direct: string; thumb: string | null }>(
      bed.server,
      bed.account.full,
      uploaded.data.id,
    );
    const page = await newPage();
    await page.goto(data.direct, { waitUntil: "networkidle0" });
    expect(await page.$eval("video", (v: Dom) => v.poster)).toBe(data.thumb);
    await page.$eval("video", (video: Dom) => {
      video.muted = true;
      return video.play();
    });
    await page.waitForFunction(() => document.querySelector("video").currentTime >= 1, { timeout: 20_000 });
    expect(errorsOf(page)).toEqual([]);
    await page.close();
    await record("video-page", data.direct);
  });

  it("opens a locked upload with its password", async () => {
    const res = await uploadFile(bed.server, bed.account.full, await fixture("pngsuite/basn2c08.png"), "locked.png", {
      title: "Locked",
      password: "open sesame",
    });
    const { data } = (await res.json()) as { data: { direct: string } };
    await record("password-form", data.direct);
    const page = await newPage("phone");
    await page.goto(data.direct, { waitUntil: "networkidle0" });
    expect(await page.$("img")).toBeNull();
    await page.type("input[name=password]", "wrong");
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
    expect(await page.$eval("strong", (s: Dom) => s.textContent)).toBe("Wrong password.");
    await page.type("input[name=password]", "open sesame");
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
    await page.waitForFunction(() => document.querySelector("main img")?.complete === true);
    expect(await page.$eval("main img", (img: Dom) => img.naturalWidth)).toBeGreaterThan(0);
    await page.close();
  });

  it("pages through the gallery", async () => {
    for (let i = 0; i < 50; i++) {
      const png = pngFile(ihdr(1, 1), pngChunk("tEXt", new TextEncoder().encode(`n\0${i}`)), ONE_PIXEL_IDAT);
      const res = await uploadFile(bed.server, bed.account.full, png, `g${i}.png`, {
        title: `Gallery ${i}`,
        visibility: "public",
        allow_duplicate: "1",
      });
      expect(res.status).toBe(200);
    }
    const page = await newPage();
    await page.goto(`${bed.server.url}/gallery`, { waitUntil: "networkidle0" });
    expect(await page.$eval(".grid li .caption", (c: Dom) => c.textContent)).toBe("Gallery 49");
    await Promise.all([page.waitForNavigation(), page.click("a[rel=next]")]);
    // Onward by the last tile's cursor (read on the gallery's index, not counted past), back by number.
    expect(page.url()).toMatch(new RegExp(`^${bed.server.url}/gallery\\?after=[\\w-]+$`));
    expect(await page.$$eval(".grid li", (items) => items.length)).toBeGreaterThan(0);
    await Promise.all([page.waitForNavigation(), page.click("a[rel=prev]")]);
    expect(page.url()).toBe(`${bed.server.url}/gallery?page=1`);
    await page.close();
    await record("gallery", `${bed.server.url}/gallery`);
  });
});

describe("albums in a browser", () => {
  /** POST or PATCH of an album through the API, with the bed's full key; its data. */
  const albumCall = async (path: string, method: string, body: unknown) => {
    const res = await fetch(`${bed.server.url}/api/albums${path}`, {
      method,
      headers: { "X-API-Key": bed.account.full, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { data: { id: string; url: string } }).data;
  };

  it("shows an album's uploads as a grid through their variants, with cards, and opens a locked one with its password", async () => {
    const res = await uploadFile(bed.server, bed.account.full, await fixture("gps/DSCN0010.jpg"), "album.jpg", {
      title: "Hillside",
      visibility: "public",
      allow_duplicate: "1",
    });
    const { data: uploaded } = (await res.json()) as { data: { id: string } };
    const photo = await processedUpload<{ id: string; src: string; thumb: string | null }>(
      bed.server,
      bed.account.full,
      uploaded.id,
    );
    const lockedRes = await uploadFile(bed.server, bed.account.full, await fixture("pngsuite/basn2c08.png"), "l.png", {
      title: "Not for the album's visitors",
      password: "upload password",
      allow_duplicate: "1",
    });
    const locked = ((await lockedRes.json()) as { data: { id: string } }).data;
    const album = await albumCall("", "POST", {
      title: "Walks",
      description: "Hills and vines.",
      visibility: "public",
    });
    await albumCall(`/${album.id}/uploads`, "POST", { uploads: [photo.id, locked.id] });

    const page = await newPage("phone");
    let images: { url: string; status: number; retryAfter?: string }[] = [];
    page.on("response", (response) => {
      if (response.request().resourceType() !== "image") return;
      images.push({ url: response.url(), status: response.status(), retryAfter: response.headers()["retry-after"] });
    });
    await page.goto(album.url, { waitUntil: "networkidle0" });
    // The media service may be busy with other variants (a 503 with Retry-After): loaded again when it says.
    for (let tries = 0; images.some((image) => image.status === 503) && tries < 5; tries++) {
      await new Promise((r) => setTimeout(r, Number(images[0]!.retryAfter ?? 5) * 1000));
      images = [];
      await page.reload({ waitUntil: "networkidle0" });
    }
    const tiles = await page.$$eval(".grid li", (items: Dom[]) =>
      items.map((item: Dom) => ({
        href: item.querySelector("a").href,
        current: item.querySelector("img")?.currentSrc ?? null,
        srcset: item.querySelector("img")?.getAttribute("srcset") ?? null,
        drawn: item.querySelector("img")?.naturalWidth ?? 0,
        text: item.textContent,
      })),
    );
    // A tile 171 CSS px wide at 2 device pixels per CSS pixel: the 480 px variant, not the 280 px thumbnail.
    expect(tiles[0]).toMatchObject({ href: `${bed.server.url}/v/${photo.id}`, current: `${photo.src}?w=480` });
    expect(tiles[0]!.srcset).toContain(photo.thumb);
    expect(tiles[0]!.drawn).toBeGreaterThan(0);
    // The locked upload: a tile saying so, linking to its own page, with nothing of it.
    expect(tiles[1]).toMatchObject({ href: `${bed.server.url}/v/${locked.id}`, current: null });
    expect(tiles[1]!.text).not.toContain("Not for the album's visitors");
    const cards = await page.$$eval("head meta", (metas: Dom[]) =>
      Object.fromEntries(
        metas.map((meta: Dom) => [meta.getAttribute("property") ?? meta.getAttribute("name"), meta.content]),
      ),
    );
    expect(cards).toMatchObject({
      "og:title": "Walks",
      "og:description": "Hills and vines.",
      "og:url": album.url,
      "twitter:card": "summary_large_image",
      "twitter:image": photo.src,
    });
    // The cover's file first, its thumbnail as the fallback.
    const ogImages = await page.$$eval("meta[property='og:image']", (metas: Dom[]) => metas.map((m: Dom) => m.content));
    expect(ogImages).toEqual([photo.src, photo.thumb]);
    expect(cards.robots).toBeUndefined();
    expect(errorsOf(page)).toEqual([]);
    await page.close();
    await record("album-page", album.url);

    // The same uploads in a locked album: the form first, and the grid once the password is given.
    const secret = await albumCall("", "POST", { title: "Private walks", password: "album password" });
    await albumCall(`/${secret.id}/uploads`, "POST", { uploads: [photo.id] });
    const form = await newPage("phone");
    await form.goto(secret.url, { waitUntil: "networkidle0" });
    expect(await form.$("img")).toBeNull();
    expect(await form.content()).not.toContain("Private walks");
    await form.type("input[name=password]", "album password");
    await Promise.all([form.waitForNavigation({ waitUntil: "networkidle0" }), form.click("button[type=submit]")]);
    expect(await form.$eval("h1", (h: Dom) => h.textContent)).toBe("Private walks");
    await form.waitForFunction(() => document.querySelector(".grid img")?.complete === true);
    expect(await form.$eval(".grid img", (img: Dom) => img.naturalWidth)).toBeGreaterThan(0);
    expect(await form.$("meta[property='og:image']")).toBeNull();
    expect(errorsOf(form)).toEqual([]);
    await form.close();
  });

  it("uploads into an album made in the uploader, and lists the account's albums with links to their pages", async () => {
    const account = await createAccount(bed.server, "albums");
    const page = await newPage();
    await openUploader(page);
    await page.type("#key", account.full);
    await page.click("#remember");
    await page.waitForSelector("#album-pick:not([hidden])");
    await page.type("#album-new", "Screenshots");
    await page.click("#album-create");
    await page.waitForFunction(
      () => document.querySelector("#album").selectedOptions[0]?.textContent === "Screenshots",
    );
    const albumId = await page.$eval("#album", (select: Dom) => select.value);
    expect(albumId).toMatch(/^[0-9A-Za-z]{10}$/);
    await (await page.$("#files"))!.uploadFile(fixturePath("gps/DSCN0010.jpg"));
    await page.waitForSelector("#results li[data-id] input", { timeout: 30_000 });
    const id = await page.$eval("#results li[data-id]", (item: Dom) => item.getAttribute("data-id"));
    // The album's list shows it holds the upload, linking to its page, which shows it.
    await page.waitForFunction(
      (album: string) =>
        document.querySelector(`#albums-list li[data-id="${album}"] span`)?.textContent.includes("1 upload"),
      {},
      albumId,
    );
    const link = await page.$eval(`#albums-list li[data-id="${albumId}"] a`, (a: Dom) => a.href);
    expect(link).toBe(`${bed.server.url}/a/${albumId}`);
    const albumPage = await (await fetch(link)).text();
    expect(albumPage).toContain(`/v/${id}`);
    expect(errorsOf(page)).toEqual([]);
    await page.screenshot({ path: path.join(SHOTS, "uploader-albums-desktop.png"), fullPage: true });

    // An upload-only key cannot list albums: it may type an album's id.
    await page.click("#forget");
    await page.type("#key", account.upload);
    await page.click("#title");
    await page.waitForSelector("#album-typed:not([hidden])");
    expect(await page.$eval("#album-pick", (p: Dom) => p.hidden)).toBe(true);
    expect(await page.$eval("#albums", (s: Dom) => s.hidden)).toBe(true);
    await page.close();
  });
});
