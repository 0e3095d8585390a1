// A video's HLS ladder: the media service's POST /video/ladder against the same ffmpeg command
// run bare on the same file, for three sources made here: speed as a multiple of real time, the
// service against bare ffmpeg, time to the first playable rung, and the ladder's bytes against
// the source's; and the page's time to first frame in Chromium, the source uploaded to the whole
// service and its ladder made by its media job.
import { spawn } from "node:child_process";
import { createReadStream } from "node:fs";
import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import chromium from "@sparticuz/chromium";
import puppeteer from "puppeteer-core";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { bundleForNode } from "../scripts/lib/bundle.mjs";
import {
  fixed,
  lavfi,
  makeWithFfmpeg,
  median,
  mediaTools,
  mib,
  ratio,
  ROOT,
  startMedia,
  startService,
  table,
  upload,
  tempDir,
} from "./lib.mjs";

// BENCH_VIDEO_RUNS: runs of each measurement (default 1); BENCH_VIDEO_LARGE=1: the 200 MB AVI too.
const RUNS = Math.max(1, Number(process.env.BENCH_VIDEO_RUNS || 1));

export const description = "HLS ladders via the media service vs the same ffmpeg command run bare";
export const settings = `median of ${RUNS} run${RUNS === 1 ? "" : "s"} of each`;

const AAC = ["-c:a", "aac", "-b:a", "128k"];

/** The sources: as a phone records (1 s GOPs), a 4K clip, and HEVC (not H.264: every rung encoded). */
const SOURCES = [
  {
    name: "1080p H.264 phone, 30 s",
    seconds: 30,
    args: (s) => [
      ...lavfi(`testsrc2=size=1920x1080:rate=30:duration=${s}`),
      ...lavfi(`sine=frequency=440:sample_rate=48000:duration=${s}`),
      ...["-c:v", "libx264", "-preset", "veryfast", "-b:v", "12M", "-maxrate", "12M", "-bufsize", "24M"],
      ...["-g", "30", "-keyint_min", "30", "-sc_threshold", "0", "-pix_fmt", "yuv420p", ...AAC],
    ],
  },
  {
    name: "4K H.264, 10 s",
    seconds: 10,
    args: (s) => [
      ...lavfi(`testsrc2=size=3840x2160:rate=30:duration=${s}`),
      ...lavfi(`sine=frequency=440:sample_rate=48000:duration=${s}`),
      ...["-c:v", "libx264", "-preset", "ultrafast", "-b:v", "40M", "-g", "60", "-pix_fmt", "yuv420p", ...AAC],
    ],
  },
  {
    name: "1080p HEVC, 20 s",
    seconds: 20,
    args: (s) => [
      ...lavfi(`testsrc2=size=1920x1080:rate=30:duration=${s}`),
      ...lavfi(`sine=frequency=440:sample_rate=48000:duration=${s}`),
      ...["-c:v", "libx265", "-preset", "ultrafast", "-b:v", "8M", "-tag:v", "hvc1", "-pix_fmt", "yuv420p", ...AAC],
    ],
  },
];

/**
 * With BENCH_VIDEO_LARGE=1, also the suite's 200 MB AVI (test/support/media.ts: 150 raw 720p
 * frames and PCM audio), converted to MP4 by the service first, as the media job's first phase
 * stores it: the ladder is made from that MP4.
 */
const LARGE = {
  name: "200 MB AVI, as stored (MP4)",
  seconds: 6,
  avi: (s) => [
    ...lavfi(`testsrc=size=1280x720:rate=25:duration=${s}`),
    ...lavfi(`sine=frequency=440:duration=${s}`),
    ...["-frames:v", "150", "-c:v", "rawvideo", "-pix_fmt", "yuv420p", "-c:a", "pcm_s16le"],
  ],
};

/** The AVI made, then converted by the service (POST /video/mp4) into `output`. */
async function storedLarge(ffmpeg, media, dir, output) {
  const avi = path.join(dir, "large.avi");
  await makeWithFfmpeg(ffmpeg, [...LARGE.avi(LARGE.seconds), avi]);
  const res = await fetch(`${media.url}/video/mp4?format=avi`, {
    method: "POST",
    headers: { Authorization: `Bearer ${media.secret}`, "Content-Length": String((await stat(avi)).size) },
    body: createReadStream(avi),
    duplex: "half",
  });
  if (res.status !== 200) throw new Error(`POST /video/mp4 answered ${res.status}: ${await res.text()}`);
  await writeFile(output, Buffer.from(await res.arrayBuffer()));
  await rm(avi);
}

/**
 * The service's own planning and argument builder (container/src/ladder-plan.ts and
 * ladder-encode.ts), bundled: the bare runs use its exact ffmpeg arguments, with no copy to drift.
 */
async function loadLadder(dir, tools) {
  const outfile = path.join(dir, "ladder.mjs");
  const contents = [
    'export { planLadder } from "./container/src/ladder-plan.ts";',
    'export { ladderArgs } from "./container/src/ladder-encode.ts";',
    'export { inspectVideo } from "./container/src/media.ts";',
    'export { VIDEO_DEMUXERS } from "./container/src/formats.ts";',
  ].join("\n");
  await bundleForNode({ stdin: { contents, resolveDir: ROOT, loader: "ts" }, outfile });
  const ladder = await import(pathToFileURL(outfile).href);
  const job = { config: { ...tools, jobTimeoutMs: 60 * 60_000 }, deadline: Date.now() + 60 * 60_000 };
  return async (input, outDir, maxBytes) => {
    const source = { file: input, demuxer: ladder.VIDEO_DEMUXERS.mp4 };
    const running = { ...job, signal: new AbortController().signal };
    const plan = await ladder.planLadder(running, source, await ladder.inspectVideo(running, source));
    return { plan, ...ladder.ladderArgs(plan, source, outDir, maxBytes) };
  };
}

/** The ladder through the service: the source streamed in, the answer read to its end. */
async function viaService(media, input, maxBytes) {
  const { size } = await stat(input);
  const start = performance.now();
  const res = await fetch(`${media.url}/video/ladder?format=mp4&maxBytes=${maxBytes}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${media.secret}`, "Content-Length": String(size) },
    body: createReadStream(input),
    duplex: "half",
  });
  if (res.status !== 200) throw new Error(`POST /video/ladder answered ${res.status}: ${await res.text()}`);
  // The manifest and the master playlist come first, the files after: the first rung is playable
  // once its playlist and media file are in, and every rung comes out of the one run together.
  const manifestLength = Number(res.headers.get("X-Media-Manifest-Length"));
  let bytes = 0;
  let text = "";
  let firstPlayable = NaN;
  let needed = Infinity;
  for await (const chunk of res.body) {
    if (bytes < manifestLength) text += Buffer.from(chunk).toString("latin1");
    bytes += chunk.length;
    if (needed === Infinity && bytes >= manifestLength)
      needed = firstRungEnd(JSON.parse(text.slice(0, manifestLength)), manifestLength);
    if (Number.isNaN(firstPlayable) && bytes >= needed) firstPlayable = (performance.now() - start) / 1000;
  }
  const seconds = (performance.now() - start) / 1000;
  const manifest = JSON.parse(text.slice(0, manifestLength));
  return { seconds, firstPlayable, bytes: bytes - manifestLength, manifest };
}

/** Where, in the answer, the files of the lowest rung (the first a player may start on) end. */
function firstRungEnd(manifest, manifestLength) {
  const lowest = manifest.rungs[manifest.rungs.length - 1];
  let at = manifestLength;
  let end = at;
  for (const file of manifest.files) {
    at += file.length;
    if ([lowest.playlist, lowest.media, "master.m3u8"].includes(file.name)) end = at;
  }
  return end;
}

/** The same ffmpeg arguments, run bare here. */
async function bare(ffmpeg, args) {
  const start = performance.now();
  await new Promise((resolve, reject) => {
    const child = spawn(ffmpeg, args, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr = (stderr + d).slice(-2000)));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`ffmpeg exited ${code}: ${stderr}`))));
  });
  return { seconds: (performance.now() - start) / 1000 };
}

/**
 * The whole service (wrangler dev, with the media service above), started once for the page's
 * measure. The bench's own key uploads; rate limits are off (startService).
 */
async function startSite(ctx, media) {
  const service = await startService(ctx, { vars: { MEDIA_SERVICE_URL: media.url, MEDIA_SECRET: media.secret } });
  return { service };
}

/** The upload's answer once its media job stored its ladder (GET {base_url}/{id} every 250 ms). */
async function withLadder(service, id) {
  for (const deadline = Date.now() + 20 * 60_000; Date.now() < deadline; await sleep(250)) {
    const res = await fetch(`${service.url}/api/${id}`, { headers: { "X-API-Key": service.fullKey } });
    const { data } = await res.json();
    if (data.hls) return data;
    if (data.processing.state === "failed") throw new Error(`the ladder failed: ${data.processing.error}`);
  }
  throw new Error(`upload ${id} got no ladder in 20 minutes`);
}

/**
 * /v/{id} in a browser of its own (nothing cached), played muted as soon as it loads: the time
 * from the navigation's start to the first frame the video presents (requestVideoFrameCallback),
 * and the rung hls.js fetched first.
 */
async function firstFrame(url) {
  const browser = await puppeteer.launch({
    executablePath: await chromium.executablePath(),
    args: chromium.args,
    headless: true,
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 800 });
    const media = [];
    page.on("request", (request) => {
      const name = new URL(request.url()).pathname.split("/").pop();
      if (name.endsWith(".mp4")) media.push(name);
    });
    await page.goto(url, { waitUntil: "domcontentloaded" });
    const ms = await page.evaluate(
      () =>
        new Promise((resolve, reject) => {
          const video = document.querySelector("video");
          video.muted = true;
          video.requestVideoFrameCallback(() => resolve(performance.now()));
          video.play().catch(reject);
        }),
    );
    return { ms, firstRung: media[0] ?? "-" };
  } finally {
    await browser.close();
  }
}

/**
 * What is measured of each source, in order; each adds its fields to the source's row: the
 * ladder through the media service, the same ffmpeg command run bare, and the page's time to
 * first frame in Chromium on the whole service.
 */
const MEASURES = [
  async function ladderViaService({ media, input, maxBytes, log, name }) {
    const runs = [];
    for (let i = 1; i <= RUNS; i++) {
      log(`  ${name}: service, run ${i}/${RUNS}`);
      runs.push(await viaService(media, input, maxBytes));
    }
    const { manifest, bytes } = runs[0];
    return {
      serviceSeconds: median(runs.map((r) => r.seconds)),
      firstPlayableSeconds: median(runs.map((r) => r.firstPlayable)),
      ladderBytes: bytes,
      rungs: manifest.rungs.map((r) => `${r.name}${r.remuxed ? " (copied)" : ""}`).join(", "),
      duration: manifest.duration,
    };
  },
  async function ladderBare({ ffmpeg, ladderRun, input, maxBytes, dir, log, name }) {
    const runs = [];
    for (let i = 1; i <= RUNS; i++) {
      log(`  ${name}: bare ffmpeg, run ${i}/${RUNS}`);
      const outDir = path.join(dir, "bare");
      await mkdir(outDir, { recursive: true });
      const { args } = await ladderRun(input, outDir, maxBytes);
      runs.push(await bare(ffmpeg, args));
      await rm(outDir, { recursive: true, force: true });
    }
    return { bareSeconds: median(runs.map((r) => r.seconds)) };
  },
  async function pageFirstFrame({ site, input, log, name }) {
    log(`  ${name}: uploaded, its ladder made by its media job, then played in Chromium`);
    const data = await readFile(input);
    const uploaded = await upload(site.service, { field: "uploads", filename: "source.mp4", type: "video/mp4", data });
    const answer = await withLadder(site.service, uploaded.id);
    const runs = [];
    for (let i = 1; i <= RUNS; i++) runs.push(await firstFrame(answer.direct));
    return { firstFrameMs: median(runs.map((r) => r.ms)), firstRung: runs[0].firstRung };
  },
];

export async function run(ctx, log) {
  const dir = await tempDir(ctx, "bench-video-");
  const tools = await mediaTools();
  log(`  ffmpeg: ${tools.ffmpeg}`);
  const ladderRun = await loadLadder(dir, tools);
  const media = await startMedia(ctx, { env: { FFMPEG_PATH: tools.ffmpeg, FFPROBE_PATH: tools.ffprobe } });
  const site = await startSite(ctx, media);
  const rows = [];
  const sources = process.env.BENCH_VIDEO_LARGE === "1" ? [...SOURCES, LARGE] : SOURCES;
  for (const source of sources) {
    log(`  generating ${source.name}`);
    const input = path.join(dir, `${rows.length}.mp4`);
    if (source === LARGE) await storedLarge(tools.ffmpeg, media, dir, input);
    else await makeWithFfmpeg(tools.ffmpeg, [...source.args(source.seconds), "-movflags", "+faststart", input]);
    const sourceBytes = (await stat(input)).size;
    // Far above any ladder, so that the figure measured is the ladder's own.
    const maxBytes = 20 * sourceBytes;
    const row = { source: source.name, sourceBytes };
    const given = { media, site, ffmpeg: tools.ffmpeg, ladderRun, input, maxBytes, dir, log, name: source.name };
    for (const measure of MEASURES) Object.assign(row, await measure(given));
    rows.push({
      ...row,
      realTime: ratio(row.duration, row.serviceSeconds),
      bareRealTime: ratio(row.duration, row.bareSeconds),
      serviceVsBare: ratio(row.bareSeconds, row.serviceSeconds),
      bytesMultiple: ratio(row.ladderBytes, sourceBytes),
    });
  }
  const report = table(
    "HLS ladder (service: POST /video/ladder, the MP4 streamed in, the answer read to its end; bare: its ffmpeg command alone)",
    [
      ["source", (r) => r.source],
      ["rungs", (r) => r.rungs],
      ["source", (r) => mib(r.sourceBytes)],
      ["ladder", (r) => mib(r.ladderBytes)],
      ["ladder / source", (r) => fixed(2)(r.bytesMultiple)],
      ["service s", (r) => fixed(2)(r.serviceSeconds)],
      ["x real time", (r) => fixed(2)(r.realTime)],
      ["bare ffmpeg s", (r) => fixed(2)(r.bareSeconds)],
      ["bare x real time", (r) => fixed(2)(r.bareRealTime)],
      ["speed vs bare (target >= 0.9)", (r) => fixed(3)(r.serviceVsBare)],
      ["first playable rung s", (r) => fixed(2)(r.firstPlayableSeconds)],
      ["page first frame ms", (r) => fixed(0)(r.firstFrameMs)],
      ["first rung played", (r) => r.firstRung],
    ],
    rows,
  );
  const note =
    "First playable rung: until the lowest rung's playlist and media file (and the master) are in. The rungs come out " +
    "of one ffmpeg run, so this is about the whole ladder's time: the service answers once every rung is made.\n";
  return { report: `${report}\n${note}`, results: { runs: RUNS, sources: rows } };
}
