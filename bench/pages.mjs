// The dashboard in the browser (npm's Chromium), on an account of 1,000 uploads: the time from
// signing in with a passkey (a virtual authenticator) to the first paint of the uploads grid; the
// grid's pages (first paint, every thumbnail in view loaded, bytes fetched) and a walk through all
// of them; and the CSS and JS each page of the site and the dashboard carries (its inline style,
// and the scripts it loads).
import chromium from "@sparticuz/chromium";
import puppeteer from "puppeteer-core";
import { addVirtualAuthenticator, fixed, makePng, median, startService, table, upload } from "./lib.mjs";

export const description = "Dashboard pages in Chromium: sign-in to first paint, a grid of 1,000 uploads, CSS and JS";
export const settings = "1,000 uploads of one account, Chromium at 1280x800";

const UPLOADS = Number(process.env.BENCH_PAGE_UPLOADS || 1000);
const RUNS = 5;

/** `count` uploads of noise PNGs of many shapes (16 to 256 px wide), 8 at a time. */
async function fill(service, count, log) {
  let next = 0;
  const one = async () => {
    while (next < count) {
      const i = next++;
      const data = makePng(1500 + (i % 7) * 400, 16 + ((i * 37) % 240));
      await upload(
        service,
        { field: "uploads", filename: `${i}.png`, type: "image/png", data },
        { allow_duplicate: "1" },
      );
      if (i % 200 === 199) log(`pages: ${i + 1} uploads made`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, one));
}

/** The page's first contentful paint, as an epoch time (ms). */
const firstPaint = (page) =>
  page.evaluate(async () => {
    for (let tries = 0; tries < 100; tries++) {
      const entry = performance.getEntriesByName("first-contentful-paint")[0];
      if (entry) return performance.timeOrigin + entry.startTime;
      await new Promise((r) => setTimeout(r, 20));
    }
    return Number.NaN;
  });

/** Every image in view has loaded (or failed): the grid as a visitor first sees it. */
const inViewLoaded = (page) =>
  page.waitForFunction(
    () =>
      [...document.images].filter((img) => img.getBoundingClientRect().top < innerHeight).every((img) => img.complete),
    { timeout: 30_000 },
  );

/** Bytes of the page's own CSS (its inline style) and JS (the scripts it loads), as served. */
async function weightOf(page, origin) {
  const css = await page.$$eval("style", (styles) =>
    styles.reduce((n, s) => n + new TextEncoder().encode(s.textContent).length, 0),
  );
  let js = 0;
  for (const src of await page.$$eval("script[src]", (scripts) => scripts.map((s) => s.getAttribute("src")))) {
    js += (await (await fetch(new URL(src, origin))).arrayBuffer()).byteLength;
  }
  return { css, js };
}

export async function run(ctx, log) {
  const service = await startService(ctx);
  const origin = service.url.replace("127.0.0.1", "localhost");
  log(`pages: making ${UPLOADS} uploads`);
  await fill(service, UPLOADS, log);
  const album = await (
    await fetch(`${service.url}/api/albums`, {
      method: "POST",
      headers: { "X-API-Key": service.fullKey, "Content-Type": "application/json" },
      body: JSON.stringify({ title: "Bench", visibility: "public" }),
    })
  ).json();
  const list = await (await fetch(`${service.url}/api`, { headers: { "X-API-Key": service.fullKey } })).json();
  const ids = list.data.map((u) => u.id).slice(0, 20);
  await fetch(`${service.url}/api/albums/${album.data.id}/uploads`, {
    method: "POST",
    headers: { "X-API-Key": service.fullKey, "Content-Type": "application/json" },
    body: JSON.stringify({ uploads: ids }),
  });

  const browser = await puppeteer.launch({ executablePath: await chromium.executablePath(), args: chromium.args });
  ctx.defer(() => browser.close());
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  await addVirtualAuthenticator(page);
  const link = await (
    await fetch(`${service.url}/api/sign-in-links`, { method: "POST", headers: { "X-API-Key": service.fullKey } })
  ).json();
  await page.goto(`${origin}${new URL(link.data.url).pathname}`, { waitUntil: "load" });
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("button[data-passkey=register]")]);

  // Sign-in to first paint: from the click on "Sign in" to the grid's first paint, signed out each time.
  const signIns = [];
  for (let i = 0; i < RUNS; i++) {
    await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("header form button")]);
    await page.goto(`${origin}/app/sign-in`, { waitUntil: "load" });
    const clicked = Date.now();
    await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("button[data-passkey=sign-in]")]);
    signIns.push((await firstPaint(page)) - clicked);
  }

  // The grid's first page, loaded afresh: first paint, thumbnails in view loaded, bytes fetched.
  const cdp = await page.createCDPSession();
  await cdp.send("Network.enable");
  let bytes = 0;
  cdp.on("Network.loadingFinished", (e) => {
    bytes += e.encodedDataLength;
  });
  const firstPage = [];
  for (let i = 0; i < RUNS; i++) {
    await cdp.send("Network.clearBrowserCache");
    bytes = 0;
    const start = Date.now();
    await page.goto(`${origin}/app`, { waitUntil: "domcontentloaded" });
    const paint = (await firstPaint(page)) - start;
    await inViewLoaded(page);
    firstPage.push({ paint, loaded: Date.now() - start, bytes, tiles: await page.$$eval(".grid li", (l) => l.length) });
  }
  // Every page of the grid, by its "More" link.
  const walkStart = Date.now();
  let pages = 1;
  let tiles = await page.$$eval(".grid li", (l) => l.length);
  while (await page.$("a[rel=next]")) {
    await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("a[rel=next]")]);
    tiles += await page.$$eval(".grid li", (l) => l.length);
    pages++;
  }
  const walk = Date.now() - walkStart;

  // CSS and JS per page.
  const upload1 = ids[0];
  const weights = [];
  for (const [name, path] of [
    ["gallery", "/gallery"],
    ["an upload's page", `/v/${upload1}`],
    ["an album", `/a/${album.data.id}`],
    ["uploader", "/upload"],
    ["dashboard: uploads", "/app"],
    ["dashboard: an upload", `/app/uploads/${upload1}`],
    ["dashboard: upload", "/app/upload"],
    ["dashboard: album", `/app/albums/${album.data.id}`],
    ["dashboard: keys", "/app/keys"],
    ["dashboard: usage", "/app/usage"],
    ["dashboard: security", "/app/security"],
  ]) {
    await page.goto(`${origin}${path}`, { waitUntil: "load" });
    weights.push({ name, ...(await weightOf(page, origin)) });
  }

  const m = (rows, key) => median(rows.map((r) => r[key]));
  const report = [
    table(
      `Dashboard, ${UPLOADS} uploads (medians of ${RUNS})`,
      [
        ["measure", (r) => r[0]],
        ["value", (r) => r[1]],
      ],
      [
        ["sign-in click to the grid's first paint", `${fixed(0)(median(signIns))} ms`],
        ["grid page 1: first paint", `${fixed(0)(m(firstPage, "paint"))} ms`],
        ["grid page 1: thumbnails in view loaded", `${fixed(0)(m(firstPage, "loaded"))} ms`],
        ["grid page 1: bytes fetched (cache cleared)", `${fixed(1)(m(firstPage, "bytes") / 1024)} KiB`],
        ["grid page 1: tiles", String(firstPage[0].tiles)],
        [`all ${pages} pages of the grid, walked by "More"`, `${fixed(0)(walk)} ms (${tiles} tiles)`],
      ],
    ),
    table(
      "CSS and JS per page (bytes as served: inline style, scripts loaded)",
      [
        ["page", (w) => w.name],
        ["CSS", (w) => w.css],
        ["JS", (w) => w.js],
      ],
      weights,
    ),
  ].join("\n\n");
  return { report, results: { signIns, firstPage, walk, pages, tiles, weights } };
}
