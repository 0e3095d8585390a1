// Image jobs (the WebP conversion and the 280 px thumbnail of src/uploads/process.ts): upload to
// finished thumbnail through the real service; each job in the Worker's engine (run in Node),
// through the media service and with the reference tools on the same file; and the budget rule's
// memory estimate next to the WebAssembly memory the job really took.
//   BENCH_IMAGE_RUNS  runs of each measurement (default 3), of which the median is reported
import { execFile } from "node:child_process";
import { readFile, rm, stat } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { bundleForNode } from "../scripts/lib/bundle.mjs";
import { fixed, kib, median, mib, ratio, ROOT, startMedia, startService, table, tempDir, upload } from "./lib.mjs";

const exec = promisify(execFile);
const RUNS = Math.max(1, Number(process.env.BENCH_IMAGE_RUNS || 3));
const POLL_MS = 20;
const PROCESS_TIMEOUT_MS = 120_000;
const MiB = 1024 * 1024;

export const description = "image jobs: upload to thumbnail, Worker engine vs media service vs cwebp/vipsthumbnail";
export const settings = `median of ${RUNS} run${RUNS === 1 ? "" : "s"} of each`;

// Both over 1 MiB, so the pipeline converts them to WebP as well as making the thumbnail.
// Uniform noise keeps the files from compressing down to what no real photo or screenshot is.
const IMAGES = [
  { key: "photo", name: "12 MP photo JPEG", file: "photo.jpg", format: "jpeg", type: "image/jpeg", width: 4000, height: 3000, encode: ["-q:v", "2"] },
  { key: "screenshot", name: "1 MP screenshot PNG", file: "screenshot.png", format: "png", type: "image/png", width: 1280, height: 800, encode: [] },
];

// The jobs process.ts runs, and the reference tool for each (writing `out` + ".webp").
const JOBS = [
  {
    key: "webp",
    name: "WebP q82",
    job: { kind: "webp", quality: 82 },
    route: "/image/webp?quality=82",
    tool: "cwebp",
    command: (input, out) => ["cwebp", ["-quiet", "-q", "82", input, "-o", `${out}.webp`]],
  },
  {
    key: "thumbnail",
    name: "thumbnail 280",
    job: { kind: "thumbnail", width: 280 },
    route: "/image/thumbnail?width=280",
    tool: "vipsthumbnail",
    command: (input, out) => ["vipsthumbnail", [input, "--size", "280x", "-o", `${out}.webp[Q=80]`]],
  },
];

async function makeImage(dir, image) {
  const file = path.join(dir, image.file);
  await exec("ffmpeg", [
    "-nostdin", "-y", "-v", "error",
    "-f", "lavfi", "-i", `testsrc2=size=${image.width}x${image.height}`,
    "-vf", "noise=alls=8:allf=u", "-frames:v", "1", ...image.encode,
    file,
  ]);
  const data = await readFile(file);
  if (data.length <= MiB) throw new Error(`${image.file} is ${data.length} bytes; the WebP job only runs on files over 1 MiB`);
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
        `export { render } from "./src/media/image/worker-engine.ts";`,
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
const { render, codecMemory } = await import(bundle);
const bytes = new Uint8Array(readFileSync(file));
const once = async () => {
  const start = performance.now();
  const out = await render(JSON.parse(image), JSON.parse(job), bytes);
  return { ms: performance.now() - start, out };
};
const first = await once();
const wasm = Object.fromEntries(codecMemory());
const second = await once();
console.log(JSON.stringify({ ms: first.ms, warmMs: second.ms, wasm, outBytes: first.out.bytes.length, width: first.out.width }));
`;

async function inWorkerEngine(engineUrl, image, source, job) {
  const { stdout } = await exec(process.execPath, ["--input-type=module", "-e", CHILD, engineUrl, image.path, JSON.stringify(source), JSON.stringify(job.job)]);
  const result = JSON.parse(stdout);
  return { ...result, wasmBytes: Object.values(result.wasm).reduce((a, b) => a + b, 0) };
}

/** The job through the media service: the file as the body, the WebP read to its end. */
async function viaService(media, image, job) {
  const start = performance.now();
  const res = await fetch(`${media.url}${job.route}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${media.secret}`, "Content-Type": image.type },
    body: image.data,
  });
  const body = await res.arrayBuffer();
  const ms = performance.now() - start;
  if (res.status !== 200) throw new Error(`POST ${job.route} answered ${res.status}: ${Buffer.from(body).toString()}`);
  return { ms, outBytes: body.byteLength };
}

async function viaTool(dir, image, job) {
  const out = path.join(dir, `${image.key}-${job.key}`);
  const [command, args] = job.command(image.path, out);
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
  const { id } = await upload(service, { field: "uploads", filename: image.file, type: image.type, data: image.data }, { allow_duplicate: "1" });
  const uploadMs = performance.now() - start;
  for (;;) {
    const res = await fetch(`${service.url}/api/${id}`, { headers: { "X-API-Key": service.fullKey } });
    const json = await res.json();
    if (res.status !== 200) throw new Error(`GET /api/${id} answered ${res.status}: ${JSON.stringify(json)}`);
    if (json.data.thumb) return { uploadMs, processedMs: performance.now() - start, storedBytes: json.data.size };
    if (performance.now() - start > PROCESS_TIMEOUT_MS) throw new Error(`${image.file}: no thumbnail after ${PROCESS_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

export async function run(ctx, log) {
  const dir = await tempDir(ctx, "bench-images-");
  log("  bundling the Worker's image engine");
  const enginePath = await buildEngine();
  const engineUrl = pathToFileURL(enginePath).href;
  const engine = await import(engineUrl);
  const media = await startMedia(ctx);
  const service = await startService(ctx, { vars: { MEDIA_SERVICE_URL: media.url, MEDIA_SECRET: media.secret } });

  const images = [];
  for (const spec of IMAGES) {
    log(`  generating ${spec.name}`);
    images.push(await makeImage(dir, spec));
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
    uploads.push({ image, uploadMs: med((r) => r.uploadMs), processedMs: med((r) => r.processedMs), storedBytes: runs[0].storedBytes });
  }

  const jobs = [];
  for (const image of images) {
    for (const job of JOBS) {
      const runs = [];
      for (let i = 1; i <= RUNS; i++) {
        log(`  ${image.name}, ${job.name}: Worker engine, media service, ${job.tool}, run ${i}/${RUNS}`);
        runs.push({
          worker: await inWorkerEngine(engineUrl, image, sourceOf(image), job),
          service: await viaService(media, image, job),
          tool: await viaTool(dir, image, job),
        });
      }
      const med = (pick) => median(runs.map(pick));
      const plan = planOf(image, job);
      jobs.push({
        image,
        job,
        plan,
        workerMs: med((r) => r.worker.ms),
        workerWarmMs: med((r) => r.worker.warmMs),
        serviceMs: med((r) => r.service.ms),
        toolMs: med((r) => r.tool.ms),
        wasmBytes: med((r) => r.worker.wasmBytes),
        // Memory is the same every run; one run's split by codec is enough to show where it goes.
        wasm: runs[0].worker.wasm,
        outBytes: { worker: runs[0].worker.outBytes, service: runs[0].service.outBytes, tool: runs[0].tool.outBytes },
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
      "Job time, ms (Worker: render() in Node, fresh process; warm: the same job again in it. Service: HTTP, body read. Tool: run directly)",
      [
        ...jobColumns,
        ["Worker", (r) => fixed(0)(r.workerMs)],
        ["Worker warm", (r) => fixed(0)(r.workerWarmMs)],
        ["service", (r) => fixed(0)(r.serviceMs)],
        ["tool", (r) => r.job.tool],
        ["tool ms", (r) => fixed(0)(r.toolMs)],
        ["Worker/tool", (r) => fixed(2)(ratio(r.workerMs, r.toolMs))],
        ["service/tool", (r) => fixed(2)(ratio(r.serviceMs, r.toolMs))],
        ["note", (r) => (r.plan.where === "worker" ? "" : "over budget (media service in production)")],
      ],
      jobs,
    ),
    table(
      "Output size, KiB",
      [...jobColumns, ["Worker", (r) => fixed(1)(r.outBytes.worker / 1024)], ["service", (r) => fixed(1)(r.outBytes.service / 1024)], ["tool", (r) => fixed(1)(r.outBytes.tool / 1024)]],
      jobs,
    ),
    table(
      `Worker memory per job: the budget rule's peak in a fresh isolate (16 MiB baseline + codec memory + the job's JS buffers; budget ${budget}) and the WebAssembly memory measured after the job`,
      [
        ...jobColumns,
        ["rule peak", (r) => mib(r.plan.peakBytes)],
        ["admitted", (r) => (r.plan.where === "worker" ? "yes" : "no")],
        ["measured WASM", (r) => mib(r.wasmBytes)],
        ["measured by codec", (r) => Object.entries(r.wasm).map(([codec, bytes]) => `${codec} ${fixed(1)(bytes / MiB)}`).join(", ")],
      ],
      jobs,
    ),
  ].join("\n");

  const results = { runs: RUNS, budgetBytes: engine.WORKER_IMAGE_BUDGET_BYTES, images: {} };
  for (const u of uploads) {
    results.images[u.image.key] = { fileBytes: u.image.data.length, uploadMs: u.uploadMs, processedMs: u.processedMs, storedBytes: u.storedBytes };
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
    };
  }
  return { report, results };
}
