// AVI-to-MP4 conversion: the media service's POST /video/mp4 against the same ffmpeg command
// run directly on the same file, in wall time and peak memory.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { readFile, rm, stat } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { bundleForNode } from "../scripts/lib/bundle.mjs";
import {
  childPids,
  fixed,
  lavfi,
  makeWithFfmpeg,
  median,
  mediaTools,
  mib,
  procMemory,
  ratio,
  ROOT,
  startMedia,
  table,
  tempDir,
} from "./lib.mjs";

const RUNS = Math.max(1, Number(process.env.BENCH_CONVERSION_RUNS || 2));
const SAMPLE_MS = 50;

export const description = "AVI to MP4 via the media service vs the same ffmpeg command run directly";
export const settings = `median of ${RUNS} run${RUNS === 1 ? "" : "s"} of each`;

const VIDEOS = [
  { name: "10 s 720p", width: 1280, height: 720, seconds: 10 },
  { name: "60 s 1080p", width: 1920, height: 1080, seconds: 60 },
];

/** An AVI such as an older camera writes: MPEG-4 Part 2 video, MP3 audio. */
async function makeAvi(ffmpeg, dir, { width, height, seconds }) {
  const file = path.join(dir, `${width}x${height}-${seconds}s.avi`);
  await makeWithFfmpeg(ffmpeg, [
    ...lavfi(`testsrc2=size=${width}x${height}:rate=30:duration=${seconds}`),
    ...lavfi(`sine=frequency=440:sample_rate=48000:duration=${seconds}`),
    "-c:v",
    "mpeg4",
    "-q:v",
    "5",
    "-c:a",
    "libmp3lame",
    "-b:a",
    "128k",
    file,
  ]);
  return file;
}

/**
 * transcodeMp4 from container/src/media.ts itself, bundled the way the service is: the direct
 * runs then use its exact ffmpeg arguments (and the same spawn), with no copy of them to drift.
 */
async function loadTranscodeMp4(dir, ffmpeg) {
  const outfile = path.join(dir, "media.mjs");
  await bundleForNode({ entryPoints: [path.join(ROOT, "container/src/media.ts")], outfile });
  const { transcodeMp4 } = await import(pathToFileURL(outfile).href);
  // The timeout only has to not fire.
  const config = { ffmpeg, jobTimeoutMs: 60 * 60_000 };
  return (input, output) => transcodeMp4(config, input, output);
}

/**
 * Peak memory of `parent` and of those of its children that `keep` accepts, sampled every
 * SAMPLE_MS until stop(). Sums take RSS, what is resident at one moment; ffmpeg's own peak takes
 * its VmHWM, which also catches spikes between samples (up to the last sample before it exits).
 */
function sampleMemory(parent, keep = () => true) {
  const peak = { parent: 0, children: 0, total: 0, ffmpeg: 0 };
  const sample = () => {
    const own = procMemory(parent)?.rssKiB ?? 0;
    let children = 0;
    for (const pid of childPids(parent)) {
      const memory = procMemory(pid);
      if (!memory || !keep(memory)) continue;
      children += memory.rssKiB;
      if (memory.name === "ffmpeg") peak.ffmpeg = Math.max(peak.ffmpeg, memory.hwmKiB);
    }
    peak.parent = Math.max(peak.parent, own);
    peak.children = Math.max(peak.children, children);
    peak.total = Math.max(peak.total, own + children);
  };
  sample();
  // Unref'd, so a conversion that throws leaves nothing keeping the run alive.
  const timer = setInterval(sample, SAMPLE_MS).unref();
  return {
    /** Peaks in bytes; NaN for what was never seen. */
    stop() {
      clearInterval(timer);
      return Object.fromEntries(Object.entries(peak).map(([key, kib]) => [key, kib > 0 ? kib * 1024 : NaN]));
    },
  };
}

/** One conversion through the service: the AVI streamed as the body, the MP4 read to its end. */
async function viaService(media, input) {
  const { size } = await stat(input);
  const sampler = sampleMemory(media.pid);
  const hash = createHash("sha1");
  let bytes = 0;
  const start = performance.now();
  const res = await fetch(`${media.url}/video/mp4?format=avi`, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${media.secret}`,
      "Content-Type": "video/x-msvideo",
      "Content-Length": String(size),
    },
    body: createReadStream(input),
    duplex: "half",
  });
  if (res.status !== 200) throw new Error(`POST /video/mp4?format=avi answered ${res.status}: ${await res.text()}`);
  // Hashing as it arrives costs milliseconds and shows whether both paths wrote the same file.
  for await (const chunk of res.body) {
    hash.update(chunk);
    bytes += chunk.length;
  }
  const seconds = (performance.now() - start) / 1000;
  return { seconds, bytes, sha1: hash.digest("hex"), memory: sampler.stop() };
}

/** The same conversion with ffmpeg spawned here; the service (idle meanwhile) is not a child it counts. */
async function direct(transcode, input, output) {
  const sampler = sampleMemory(process.pid, (m) => m.name === "ffmpeg");
  const start = performance.now();
  await transcode(input, output);
  const seconds = (performance.now() - start) / 1000;
  // The parent here is this process, which is not part of the conversion.
  const { children, ffmpeg } = sampler.stop();
  const data = await readFile(output);
  await rm(output);
  return {
    seconds,
    bytes: data.length,
    sha1: createHash("sha1").update(data).digest("hex"),
    memory: { children, ffmpeg },
  };
}

export async function run(ctx, log) {
  const dir = await tempDir(ctx, "bench-conversion-");
  // The ffmpeg the service picks, passed to it explicitly so that both paths surely run the same binary.
  const { ffmpeg } = await mediaTools();
  log(`  ffmpeg: ${ffmpeg}`);
  const transcode = await loadTranscodeMp4(dir, ffmpeg);
  const media = await startMedia(ctx, { env: { FFMPEG_PATH: ffmpeg } });

  const rows = [];
  for (const video of VIDEOS) {
    log(`  generating ${video.name} AVI`);
    const input = await makeAvi(ffmpeg, dir, video);
    const runs = [];
    for (let i = 1; i <= RUNS; i++) {
      // Alternating which goes first keeps any drift (heat, page cache) fair to both.
      const order = i % 2 ? ["service", "direct"] : ["direct", "service"];
      const result = {};
      for (const kind of order) {
        log(`  ${video.name}: ${kind}, run ${i}/${RUNS}`);
        result[kind] =
          kind === "service"
            ? await viaService(media, input)
            : await direct(transcode, input, path.join(dir, "direct.mp4"));
      }
      runs.push(result);
    }
    const med = (pick) => median(runs.map(pick));
    const serviceSeconds = med((r) => r.service.seconds);
    const directSeconds = med((r) => r.direct.seconds);
    rows.push({
      video: video.name,
      inputBytes: (await stat(input)).size,
      outputBytes: runs[0].service.bytes,
      sameOutput: runs.every((r) => r.service.sha1 === runs[0].service.sha1 && r.direct.sha1 === r.service.sha1),
      serviceSeconds,
      directSeconds,
      overhead: ratio(serviceSeconds, directSeconds),
      serverPeakBytes: med((r) => r.service.memory.parent),
      serviceTotalPeakBytes: med((r) => r.service.memory.total),
      serviceFfmpegPeakBytes: med((r) => r.service.memory.ffmpeg),
      directFfmpegPeakBytes: med((r) => r.direct.memory.ffmpeg),
      directChildrenPeakBytes: med((r) => r.direct.memory.children),
      runs,
    });
  }

  const report = [
    table(
      "Wall time (service: POST /video/mp4, AVI streamed in, MP4 read to the end; includes its ffprobe of the output)",
      [
        ["video", (r) => r.video],
        ["AVI", (r) => mib(r.inputBytes)],
        ["MP4", (r) => mib(r.outputBytes)],
        ["service s", (r) => fixed(2)(r.serviceSeconds)],
        ["direct ffmpeg s", (r) => fixed(2)(r.directSeconds)],
        ["service / direct", (r) => fixed(3)(r.overhead)],
        // With few runs the spread shows whether the ratio is more than noise.
        ["service runs", (r) => r.runs.map((x) => fixed(2)(x.service.seconds)).join(" ")],
        ["direct runs", (r) => r.runs.map((x) => fixed(2)(x.direct.seconds)).join(" ")],
        ["same MP4 bytes", (r) => (r.sameOutput ? "yes" : "NO")],
      ],
      rows,
    ),
    table(
      `Peak memory (RSS sampled every ${SAMPLE_MS} ms; ffmpeg peaks are its VmHWM)`,
      [
        ["video", (r) => r.video],
        ["service Node RSS", (r) => mib(r.serverPeakBytes)],
        ["service + children RSS", (r) => mib(r.serviceTotalPeakBytes)],
        ["service's ffmpeg", (r) => mib(r.serviceFfmpegPeakBytes)],
        ["direct ffmpeg", (r) => mib(r.directFfmpegPeakBytes)],
      ],
      rows,
    ),
  ].join("\n");

  return { report, results: { runs: RUNS, sampleMs: SAMPLE_MS, videos: rows } };
}
