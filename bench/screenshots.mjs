// `npm run screenshots`: the pictures of docs/screenshots/, taken afresh. It starts the service and
// the media service on a fresh state, uploads the test fixtures' photos to an account (public, in an
// album), signs in to the dashboard with a passkey (Chromium's virtual authenticator), and takes
// each page at a phone's and a desktop's width, in light and dark (prefers-color-scheme).
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import chromium from "@sparticuz/chromium";
import puppeteer from "puppeteer-core";
import { addVirtualAuthenticator, createContext, mediaTools, ROOT, startMedia, startService } from "./lib.mjs";

const OUT = path.join(ROOT, "docs", "screenshots");
const PHOTOS = [
  ["gps/DSCN0010.jpg", "Harbour from the hill"],
  ["orientation/landscape_1.jpg", "Path through the field"],
  ["gps/DSCN0021.jpg", "Old town square"],
  ["orientation/landscape_6.jpg", "The same path, turned"],
  ["pngsuite/basn6a16.png", "Gradient test card"],
  ["orientation/landscape_3.jpg", "Field, upside down"],
];
const WIDTHS = {
  phone: { width: 390, height: 844, isMobile: true, deviceScaleFactor: 1 },
  desktop: { width: 1280, height: 800, deviceScaleFactor: 1 },
};

const ctx = createContext();
try {
  const { ffmpeg } = await mediaTools();
  const media = await startMedia(ctx, { env: { FFMPEG_PATH: ffmpeg } });
  const service = await startService(ctx, { vars: { MEDIA_SERVICE_URL: media.url, MEDIA_SECRET: media.secret } });
  const origin = service.url.replace("127.0.0.1", "localhost");
  const api = async (method, route, body) => {
    const res = await fetch(`${service.url}/api${route}`, {
      method,
      headers: {
        "X-API-Key": service.fullKey,
        ...(body instanceof FormData ? {} : { "Content-Type": "application/json" }),
      },
      body: body instanceof FormData ? body : body && JSON.stringify(body),
    });
    return (await res.json()).data;
  };
  const ids = [];
  for (const [file, title] of PHOTOS) {
    const form = new FormData();
    form.append("title", title);
    form.append("visibility", "public");
    form.append("uploads", new Blob([readFileSync(path.join(ROOT, "test/fixtures", file))]), path.basename(file));
    ids.push((await api("POST", "", form)).id);
  }
  // Every thumbnail and placeholder made before the pictures are taken.
  for (let tries = 0; tries < 60; tries++) {
    const listed = await api("GET", "");
    if (listed.every((u) => u.thumb && u.placeholder)) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  const album = await api("POST", "/albums", { title: "Walks", visibility: "public", description: "Around town." });
  await api("POST", `/albums/${album.id}/uploads`, { uploads: ids });
  await api("PATCH", `/albums/${album.id}`, { cover: ids[0] });

  const browser = await puppeteer.launch({ executablePath: await chromium.executablePath(), args: chromium.args });
  ctx.defer(() => browser.close());
  const page = await browser.newPage();
  await addVirtualAuthenticator(page);
  const link = await api("POST", "/sign-in-links");
  await page.goto(`${origin}${new URL(link.url).pathname}`, { waitUntil: "load" });
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("button[data-passkey=register]")]);

  mkdirSync(OUT, { recursive: true });
  // The pages the issue names at both widths; the dashboard's other pages at a desktop's.
  const pages = {
    dashboard: "/app",
    uploader: "/app/upload",
    "upload-page": `/app/uploads/${ids[0]}`,
    album: `/a/${album.id}`,
    gallery: "/gallery",
    "album-manage": `/app/albums/${album.id}`,
    keys: "/app/keys",
    usage: "/app/usage",
    webhooks: "/app/webhooks",
    security: "/app/security",
  };
  const bothWidths = new Set(["dashboard", "uploader", "upload-page", "album", "gallery"]);
  for (const [name, route] of Object.entries(pages)) {
    for (const [width, viewport] of Object.entries(WIDTHS)) {
      if (width === "phone" && !bothWidths.has(name)) continue;
      for (const scheme of ["light", "dark"]) {
        await page.setViewport(viewport);
        await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: scheme }]);
        await page.goto(`${origin}${route}`, { waitUntil: "networkidle0" });
        const file = path.join(OUT, `${name}-${width}-${scheme}.jpg`);
        await page.screenshot({ path: file, type: "jpeg", quality: 70, fullPage: width === "phone" });
        console.log(`screenshots: ${path.relative(ROOT, file)}`);
      }
    }
  }
} finally {
  await ctx.cleanup();
}
