// Image jobs (the WebP conversion and the 280 px thumbnail of src/uploads/media-jobs/): upload to
// finished thumbnail through the real service; each job in the Worker's engine (run in Node),
// through the media service (sharp in-process; libheif for HEIC) and, when they are installed,
// with the reference tools on the same file (cwebp, vipsthumbnail; for HEIC the vips command line
// the service used before); the media service's peak memory per job; and the budget rule's
// memory estimate next to the WebAssembly memory the Worker's job really took.
//   BENCH_IMAGE_RUNS  runs of each measurement (default 3), of which the median is reported
import { execFile } from "node:child_process";
import { copyFile, readFile, rm, stat } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { bundleForNode } from "../scripts/lib/bundle.mjs";
import {
  childPids,
  fixed,
  kib,
  lavfi,
  makeWithFfmpeg,
  median,
  mediaTools,
  mib,
  onPath,
  procMemory,
  ratio,
  ROOT,
  startMedia,
  startService,
  table,
  tempDir,
  upload,
} from "./lib.mjs";

const exec = promisify(execFile);
const RUNS = Math.max(1, Number(process.env.BENCH_IMAGE_RUNS || 3));
const POLL_MS = 20;
const PROCESS_TIMEOUT_MS = 120_000;
const MiB = 1024 * 1024;

export const description = "image jobs: upload to thumbnail, Worker engine vs media service vs cwebp/vipsthumbnail";
export const settings = `median of ${RUNS} run${RUNS === 1 ? "" : "s"} of each`;

// All over 1 MiB, so the pipeline converts them to WebP as well as making the thumbnail.
// Uniform noise keeps the files from compressing down to what no real photo or screenshot is.
// The HEIC was made once the same way (4032x3024, noise 8) with libheif's heif-enc -q 55:
// nothing on npm encodes HEIC.
const IMAGES = [
  {
    key: "photo",
    name: "12 MP photo JPEG",
    file: "photo.jpg",
    format: "jpeg",
    type: "image/jpeg",
    width: 4000,
    height: 3000,
    encode: ["-q:v", "2"],
  },
  {
    key: "screenshot",
    name: "1 MP screenshot PNG",
    file: "screenshot.png",
    format: "png",
    type: "image/png",
    width: 1280,
    height: 800,
    encode: [],
  },
  {
    key: "heic",
    name: "12 MP photo HEIC",
    file: "photo-12mp.heic",
    format: "heic",
    type: "image/heic",
    width: 4032,
    height: 3024,
    fixture: "bench/fixtures/photo-12mp.heic",
  },
];

// The jobs process.ts runs, and the reference tool for each (writing `out` + ".webp"): cwebp and
// vipsthumbnail, except that cwebp cannot read HEIC, for which the service's previous engine
// (libvips' command line with libheif) stands in.
const JOBS = [
  {
    key: "webp",
    name: "WebP q82",
    job: { kind: "webp", quality: 82 },
    route: "/image/webp?quality=82",
    tool: (image) =>
      image.format === "heic"
        ? {
            name: "vipsthumbnail",
            command: (input, out) => [
              "vipsthumbnail",
              [input, "--size", "30000x30000>", "-o", `${out}.webp[Q=82,strip]`],
            ],
          }
        : { name: "cwebp", command: (input, out) => ["cwebp", ["-quiet", "-q", "82", input, "-o", `${out}.webp`]] },
  },
  {
    key: "thumbnail",
    name: "thumbnail 280",
    job: { kind: "thumbnail", width: 280 },
    route: "/image/thumbnail?width=280",
    tool: () => ({
      name: "vipsthumbnail",
      command: (input, out) => ["vipsthumbnail", [input, "--size", "280x", "-o", `${out}.webp[Q=80]`]],
    }),
  },
];

const TARGETS = { webp: 1.1, thumbnail: 1.2 };

async function makeImage(ffmpeg, dir, image) {
  const file = path.join(dir, image.file);
  if (image.fixture) {
    await copyFile(path.join(ROOT, image.fixture), file);
  } else {
    await makeWithFfmpeg(ffmpeg, [
      ...lavfi(`testsrc2=size=${image.width}x${image.height}`),
      "-vf",
      "noise=alls=8:allf=u",
      "-frames:v",
      "1",
      ...image.encode,
      file,
    ]);
  }
  const data = await readFile(file);
  if (data.length <= MiB)
    throw new Error(`${image.file} is ${data.length} bytes; the WebP job only runs on files over 1 MiB`);
  return { ...image, path: file, data };
}

/**
 * The Worker's image engine as a Node module. Wrangler's bundler turns a `.wasm` import into a
 * compiled WebAssembly.Module; this plugin does the same, so codecs.ts runs unchanged. The jSquash
 * glue files bundle as ordinary JS.
 */
async function buildEngine() {
  const outfile = path.join(ROOT, "bench/.out/images-engine.mjs");
  const wasmAsModule = {
    name: "wasm-as-module",
    setup(b) {
      b.onLoad({ filter: /\.wasm$/ }, (args) => ({
        contents: `import { readFileSync } from "node:fs";\nexport default new WebAssembly.Module(readFileSync(${JSON.stringify(args.path)}));\n`,
        loader: "js",
      }));
    },
  };
  return bundleForNode({
    stdin: {
      contents: [
        `export { renderUncounted } from "./src/media/image/worker-engine.ts";`,
        `export { planImageJob, WORKER_IMAGE_BUDGET_BYTES, ISOLATE_LIMIT_BYTES } from "./src/media/image/budget.ts";`,
        `export { codecMemory } from "./src/media/image/codecs.ts";`,
      ].join("\n"),
      resolveDir: ROOT,
      loader: "ts",
      sourcefile: "images-engine-entry.ts",
    },
    outfile,
    plugins: [wasmAsModule],
  });
}

/**
 * One job in a new Node process: WebAssembly memory only grows and codecs stay loaded, so a
 * process per measurement is what a fresh isolate is, and earlier jobs cannot inflate the figure.
 * The job then runs a second time in the same process, for the time an isolate with its codecs
 * already loaded and warm would take.
 */
const CHILD = `
import { readFileSync } from "node:fs";
const [bundle, file, image, job] = process.argv.slice(1);
const { renderUncounted, codecMemory } = await import(bundle);
const bytes = new Uint8Array(readFileSync(file));
const once = async () => {
  const start = performance.now();
  const out = await renderUncounted(JSON.parse(image), JSON.parse(job), bytes);
  return { ms: performance.now() - start, out };
};
const first = await once();
const wasm = Object.fromEntries(codecMemory());
const second = await once();
console.log(JSON.stringify({ ms: first.ms, warmMs: second.ms, wasm, outBytes: first.out.bytes.length, width: first.out.width }));
`;

async function inWorkerEngine(engineUrl, image, source, job) {
  const { stdout } = await exec(process.execPath, [
    "--input-type=module",
    "-e",
    CHILD,
    engineUrl,
    image.path,
    JSON.stringify(source),
    JSON.stringify(job.job),
  ]);
  const result = JSON.parse(stdout);
  return { ...result, wasmBytes: Object.values(result.wasm).reduce((a, b) => a + b, 0) };
}

/** The job through the media service: the file as the body, the WebP read to its end. */
async function viaService(media, image, job) {
  const start = performance.now();
  // The service reads the file as the format the Worker sniffed, named like this.
  const res = await fetch(`${media.url}${job.route}&format=${image.format}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${media.secret}`, "Content-Type": image.type },
    body: image.data,
  });
  const body = await res.arrayBuffer();
  const ms = performance.now() - start;
  if (res.status !== 200) throw new Error(`POST ${job.route} answered ${res.status}: ${Buffer.from(body).toString()}`);
  return { ms, outBytes: body.byteLength };
}

/**
 * The media service's peak memory for one job: a fresh service runs just that job, and its
 * VmHWM (plus any ffmpeg it spawned) is read before it stops; minus its peak before the job,
 * that is what the job itself took.
 */
async function servicePeak(ctx, ffmpeg, image, job) {
  const media = await startMedia(ctx, { env: { FFMPEG_PATH: ffmpeg } });
  const idle = procMemory(media.pid).hwmKiB * 1024;
  let children = 0;
  const timer = setInterval(() => {
    for (const pid of childPids(media.pid)) children = Math.max(children, (procMemory(pid)?.hwmKiB ?? 0) * 1024);
  }, 10);
  try {
    await viaService(media, image, job);
  } finally {
    clearInterval(timer);
  }
  const peak = procMemory(media.pid).hwmKiB * 1024;
  await media.stop();
  return { idle, peak, children };
}

async function viaTool(dir, image, tool) {
  const out = path.join(dir, `${image.key}-${tool.name}`);
  const [command, args] = tool.command(image.path, out);
  const start = performance.now();
  await exec(command, args);
  const ms = performance.now() - start;
  const { size } = await stat(`${out}.webp`);
  await rm(`${out}.webp`);
  return { ms, outBytes: size };
}

/** Upload response time, then time from the upload's start until GET /api/{id} shows a thumbnail. */
async function uploadUntilProcessed(service, image) {
  const start = performance.now();
  const { id } = await upload(
    service,
    { field: "uploads", filename: image.file, type: image.type, data: image.data },
    { allow_duplicate: "1" },
  );
  const uploadMs = performance.now() - start;
  for (;;) {
    const res = await fetch(`${service.url}/api/${id}`, { headers: { "X-API-Key": service.fullKey } });
    const json = await res.json();
    if (res.status !== 200) throw new Error(`GET /api/${id} answered ${res.status}: ${JSON.stringify(json)}`);
    if (json.data.thumb) return { uploadMs, processedMs: performance.now() - start, storedBytes: json.data.size };
    if (performance.now() - start > PROCESS_TIMEOUT_MS)
      throw new Error(`${image.file}: no thumbnail after ${PROCESS_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

export async function run(ctx, log) {
  const dir = await tempDir(ctx, "bench-images-");
  log("  bundling the Worker's image engine");
  const enginePath = await buildEngine();
  const engineUrl = pathToFileURL(enginePath).href;
  const engine = await import(engineUrl);
  const { ffmpeg } = await mediaTools();
  const media = await startMedia(ctx, { env: { FFMPEG_PATH: ffmpeg } });
  const service = await startService(ctx, { vars: { MEDIA_SERVICE_URL: media.url, MEDIA_SECRET: media.secret } });
  const missingTools = ["cwebp", "vipsthumbnail"].filter((tool) => !onPath(tool));
  if (missingTools.length) log(`  not installed, so not compared: ${missingTools.join(", ")}`);

  const images = [];
  for (const spec of IMAGES) {
    log(`  generating ${spec.name}`);
    images.push(await makeImage(ffmpeg, dir, spec));
  }
  // What the upload path reads from the header; these files are upright and not animated.
  const sourceOf = (image) => ({
    format: image.format,
    storedWidth: image.width,
    storedHeight: image.height,
    orientation: 1,
    animated: false,
    bytes: image.data.length,
  });
  // A fresh isolate: no codec loaded yet.
  const planOf = (image, job) => engine.planImageJob(sourceOf(image), job.job, new Map());
  // The Worker has no HEIC decoder: there is nothing of it to time.
  const workerCan = (image) => image.format !== "heic";

  // One untimed upload, so the first measured one does not pay for the Worker's start.
  await uploadUntilProcessed(service, images[1]);
  const uploads = [];
  for (const image of images) {
    const runs = [];
    for (let i = 1; i <= RUNS; i++) {
      log(`  ${image.name}: upload and processing, run ${i}/${RUNS}`);
      runs.push(await uploadUntilProcessed(service, image));
    }
    const med = (pick) => median(runs.map(pick));
    uploads.push({
      image,
      uploadMs: med((r) => r.uploadMs),
      processedMs: med((r) => r.processedMs),
      storedBytes: runs[0].storedBytes,
    });
  }

  const jobs = [];
  for (const image of images) {
    for (const job of JOBS) {
      const tool = job.tool(image);
      const haveTool = onPath(tool.name);
      const runs = [];
      // One untimed job, so that loading libheif or sharp's first use is not in the first run.
      await viaService(media, image, job);
      for (let i = 1; i <= RUNS; i++) {
        log(`  ${image.name}, ${job.name}: Worker engine, media service, ${tool.name}, run ${i}/${RUNS}`);
        runs.push({
          worker: workerCan(image) ? await inWorkerEngine(engineUrl, image, sourceOf(image), job) : null,
          service: await viaService(media, image, job),
          tool: haveTool ? await viaTool(dir, image, tool) : null,
        });
      }
      log(`  ${image.name}, ${job.name}: the media service's peak memory`);
      const memory = await servicePeak(ctx, ffmpeg, image, job);
      const med = (pick) => median(runs.map(pick));
      const plan = planOf(image, job);
      jobs.push({
        image,
        job,
        plan,
        tool: haveTool ? tool.name : `${tool.name} (not installed)`,
        workerMs: med((r) => r.worker?.ms),
        workerWarmMs: med((r) => r.worker?.warmMs),
        serviceMs: med((r) => r.service.ms),
        toolMs: med((r) => r.tool?.ms),
        wasmBytes: med((r) => r.worker?.wasmBytes),
        // Memory is the same every run; one run's split by codec is enough to show where it goes.
        wasm: runs[0].worker?.wasm ?? {},
        memory,
        outBytes: { worker: runs[0].worker?.outBytes, service: runs[0].service.outBytes, tool: runs[0].tool?.outBytes },
      });
    }
  }

  const engineOf = (plan) => `${plan.where === "worker" ? "Worker" : "service"} (${mib(plan.peakBytes)})`;
  const budget = `${mib(engine.WORKER_IMAGE_BUDGET_BYTES)} of a ${mib(engine.ISOLATE_LIMIT_BYTES)} isolate`;
  const jobColumns = [
    ["image", (r) => r.image.name],
    ["job", (r) => r.job.name],
  ];
  const report = [
    table(
      `Upload (POST /api, allow_duplicate=1) and processing (until GET /api/{id} every ${POLL_MS} ms shows a thumbnail; from the upload's start)`,
      [
        ["image", (r) => r.image.name],
        ["file", (r) => mib(r.image.data.length)],
        ["upload ms", (r) => fixed(0)(r.uploadMs)],
        ["processed ms", (r) => fixed(0)(r.processedMs)],
        ["stored after", (r) => kib(r.storedBytes)],
        // The rule's choice and estimated peak for each job in a fresh isolate.
        ...JOBS.map((job) => [`${job.name} engine`, (r) => engineOf(planOf(r.image, job))]),
      ],
      uploads,
    ),
    table(
      "Job time, ms (Worker: renderUncounted() in Node, fresh process; warm: the same job again in it. Service: HTTP, body read. Tool: run directly)",
      [
        ...jobColumns,
        ["Worker", (r) => fixed(0)(r.workerMs)],
        ["Worker warm", (r) => fixed(0)(r.workerWarmMs)],
        ["service", (r) => fixed(0)(r.serviceMs)],
        ["tool", (r) => r.tool],
        ["tool ms", (r) => fixed(0)(r.toolMs)],
        ["Worker/tool", (r) => fixed(2)(ratio(r.workerMs, r.toolMs))],
        ["service/tool", (r) => fixed(2)(ratio(r.serviceMs, r.toolMs))],
        // The media service's targets: thumbnails within 1.2x vipsthumbnail, WebP within 1.1x cwebp.
        ["target", (r) => `<= ${TARGETS[r.job.key]}`],
        [
          "note",
          (r) =>
            !workerCan(r.image)
              ? "no HEIC codec in the Worker"
              : r.plan.where === "worker"
                ? ""
                : "over budget (media service in production)",
        ],
      ],
      jobs,
    ),
    table(
      "Output size, KiB",
      [
        ...jobColumns,
        ["Worker", (r) => fixed(1)(r.outBytes.worker / 1024)],
        ["service", (r) => fixed(1)(r.outBytes.service / 1024)],
        ["tool", (r) => fixed(1)(r.outBytes.tool / 1024)],
      ],
      jobs,
    ),
    table(
      "Media service peak memory per job (a fresh service running that one job: its VmHWM before and after, and any ffmpeg it spawned)",
      [
        ...jobColumns,
        ["idle service", (r) => mib(r.memory.idle)],
        ["peak with the job", (r) => mib(r.memory.peak)],
        ["job's own", (r) => mib(r.memory.peak - r.memory.idle)],
        ["ffmpeg", (r) => (r.memory.children ? mib(r.memory.children) : "-")],
      ],
      jobs,
    ),
    table(
      `Worker memory per job: the budget rule's peak in a fresh isolate (16 MiB baseline + codec memory + the job's JS buffers; budget ${budget}) and the WebAssembly memory measured after the job`,
      [
        ...jobColumns,
        ["rule peak", (r) => mib(r.plan.peakBytes)],
        ["admitted", (r) => (r.plan.where === "worker" ? "yes" : "no")],
        ["measured WASM", (r) => mib(r.wasmBytes)],
        [
          "measured by codec",
          (r) =>
            Object.entries(r.wasm)
              .map(([codec, bytes]) => `${codec} ${fixed(1)(bytes / MiB)}`)
              .join(", "),
        ],
      ],
      jobs,
    ),
  ].join("\n");

  const results = { runs: RUNS, budgetBytes: engine.WORKER_IMAGE_BUDGET_BYTES, images: {} };
  for (const u of uploads) {
    results.images[u.image.key] = {
      fileBytes: u.image.data.length,
      uploadMs: u.uploadMs,
      processedMs: u.processedMs,
      storedBytes: u.storedBytes,
    };
  }
  for (const j of jobs) {
    results.images[j.image.key][j.job.key] = {
      ruleBytes: j.plan.peakBytes,
      wasmBytes: j.wasmBytes,
      workerMs: j.workerMs,
      workerWarmMs: j.workerWarmMs,
      serviceMs: j.serviceMs,
      toolMs: j.toolMs,
      workerOutBytes: j.outBytes.worker,
      serviceOutBytes: j.outBytes.service,
      toolOutBytes: j.outBytes.tool,
      tool: j.tool,
      servicePeakBytes: j.memory.peak,
      serviceIdleBytes: j.memory.idle,
    };
  }
  return { report, results };
}
