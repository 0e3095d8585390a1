// Large uploads: a 200 MiB file in 40 pieces through POST /api/chunk (one at a time, and 4 in
// flight) finished by upload_id, and a ~100 MiB direct POST /api: throughput, and memory and CPU
// of wrangler dev's workerd processes. Minimal Workers are the baselines of what the local
// runtime itself costs: one storing the same ~100 MiB body in R2, one storing the same 40 pieces
// as parts of an R2 multipart upload (a request per piece, then one to complete it). Each run
// gets a fresh server. measurePieces() gives the pieces' figures alone, for other suites;
// measureRuns() and byKey() measure any upload as these are (the tus suite's).
import { createHash, randomBytes, randomFillSync } from "node:crypto";
import { sizedPng } from "../test/support/png.ts";
import { fixed, median, mib, sampleRss, startMinimal, startService, table, usage, workerdPids } from "./lib.mjs";

const RUNS = Math.max(1, Number(process.env.BENCH_LARGE_RUNS || 2));
const SAMPLE_MS = 50;
const SETTLE_MS = 3000;
const REQUEST_TIMEOUT_MS = 60_000;
const MiB = 1024 * 1024;
const PIECE_BYTES = 5 * MiB; // the service's piece limit (src/uploads/intake/piece-sessions.ts)
const CHUNKED_BYTES = 200 * MiB; // 40 pieces exactly
// The direct request must stay under the 100 MiB request limit including its multipart framing.
const DIRECT_BYTES = 100 * MiB - 64 * 1024;

export const description = "200 MiB in 5 MiB pieces (sequential, 4 in flight) and a ~100 MiB direct upload";
export const settings = `median of ${RUNS} run${RUNS === 1 ? "" : "s"} of each; MB/s means MiB/s`;

const CONFIGS = [
  {
    key: "chunkedSequential",
    name: "chunked, sequential",
    bytes: CHUNKED_BYTES,
    requests: 41,
    send: (s, blob) => chunked(s, blob, 1),
  },
  {
    key: "chunkedParallel4",
    name: "chunked, 4 in flight",
    bytes: CHUNKED_BYTES,
    requests: 41,
    send: (s, blob) => chunked(s, blob, 4),
  },
  { key: "direct", name: "direct POST /api", bytes: DIRECT_BYTES, requests: 1, send: direct },
  {
    key: "minimalPut",
    name: "baseline: minimal R2 PUT",
    bytes: DIRECT_BYTES,
    requests: 1,
    send: minimalPut,
    minimal: true,
  },
  {
    key: "minimalParts",
    name: "baseline: minimal R2 parts",
    bytes: CHUNKED_BYTES,
    requests: 41,
    send: minimalParts,
    minimal: true,
  },
];
export const byKey = (key) => CONFIGS.find((config) => config.key === key);
/** What the pieces are measured against: the service's throughput at least this share of the baseline's... */
const TARGET_RATIO = 0.7;
/** ...and its finishing request at most this share of its total time. */
const TARGET_FINISH_SHARE = 0.2;

/** A PNG of exactly `total` bytes, its data random: every file is new to duplicate detection. */
const largePng = (total) => sizedPng(total, (data) => randomFillSync(data));

async function post(server, path, form) {
  // Far above any request's time here, but well below undici's 5 minutes of silence: a request
  // stalled in wrangler dev (see SETTLE_MS) then fails the run soon, saying so.
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "X-API-Key": server.fullKey },
    body: form,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  }).catch((error) => {
    const what = error.name === "TimeoutError" ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` : String(error);
    throw new Error(`POST ${path}: ${what}`, { cause: error });
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  if (res.status !== 200 || json?.type !== "success")
    throw new Error(`POST ${path} answered ${res.status}: ${text.slice(0, 500)}`);
  return json;
}

function form(fields, file) {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) f.append(k, v);
  if (file) f.append(file.field, file.blob, file.filename);
  return f;
}

/** The pieces from a pool of `parallel` senders, then the finishing request; times both. */
async function chunked(server, blob, parallel) {
  const uploadId = randomBytes(16).toString("hex");
  const total = Math.ceil(blob.size / PIECE_BYTES);
  let next = 0;
  const sender = async () => {
    for (let index = next++; index < total; index = next++) {
      // Blob.slice references the bytes, so building a request copies nothing ahead of sending.
      const chunk = blob.slice(index * PIECE_BYTES, (index + 1) * PIECE_BYTES);
      await post(
        server,
        "/api/chunk",
        form({ upload_id: uploadId, index, total }, { field: "chunk", blob: chunk, filename: "blob" }),
      );
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: parallel }, sender));
  const finishStart = performance.now();
  const { data } = await post(server, "/api", form({ upload_id: uploadId, filename: "large.png", keep_original: "1" }));
  const end = performance.now();
  return { data, seconds: (end - start) / 1000, finishSeconds: (end - finishStart) / 1000 };
}

async function direct(server, blob) {
  const start = performance.now();
  const { data } = await post(
    server,
    "/api",
    form({ keep_original: "1" }, { field: "uploads", blob, filename: "large.png" }),
  );
  return { data, seconds: (performance.now() - start) / 1000, finishSeconds: NaN };
}

/** The same bytes as the body of a PUT the minimal Worker streams into R2, and nothing else. */
async function minimalPut(server, blob) {
  const start = performance.now();
  const res = await fetch(`${server.url}/o/large.png`, {
    method: "PUT",
    headers: { "Content-Type": "image/png" },
    body: blob,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const json = await res.json().catch(() => null);
  if (res.status !== 201 || json?.size !== blob.size)
    throw new Error(`minimal PUT answered ${res.status}: ${JSON.stringify(json)}`);
  return { data: null, seconds: (performance.now() - start) / 1000, finishSeconds: NaN };
}

/**
 * The same pieces, one request each, stored by the minimal Worker as the parts of an R2
 * multipart upload, and a last request that completes it.
 */
async function minimalParts(server, blob) {
  const key = `pieces-${randomBytes(8).toString("hex")}.png`;
  const total = Math.ceil(blob.size / PIECE_BYTES);
  const parts = [];
  let upload = null;
  const start = performance.now();
  for (let index = 0; index < total; index++) {
    const query = upload ? `?upload=${encodeURIComponent(upload)}` : "";
    const res = await fetch(`${server.url}/p/${key}/${index + 1}${query}`, {
      method: "PUT",
      body: blob.slice(index * PIECE_BYTES, (index + 1) * PIECE_BYTES),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const json = await res.json().catch(() => null);
    if (res.status !== 200 || !json?.part)
      throw new Error(`minimal part ${index + 1} answered ${res.status}: ${JSON.stringify(json)}`);
    upload = json.upload;
    parts.push(json.part);
  }
  const finishStart = performance.now();
  const res = await fetch(`${server.url}/p/${key}?upload=${encodeURIComponent(upload)}`, {
    method: "POST",
    body: JSON.stringify(parts),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const json = await res.json().catch(() => null);
  if (res.status !== 201 || json?.size !== blob.size)
    throw new Error(`minimal complete answered ${res.status}: ${JSON.stringify(json)}`);
  const end = performance.now();
  return { data: null, seconds: (end - start) / 1000, finishSeconds: (end - finishStart) / 1000 };
}

/** The served file must be the original, byte for byte; hashed as it streams in. */
async function verify(data, file) {
  if (data.size !== file.length) throw new Error(`data.size is ${data.size}, the file ${file.length} bytes`);
  if (data.duplicate) throw new Error("the upload was taken for a duplicate");
  const res = await fetch(data.src, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  if (res.status !== 200) throw new Error(`GET ${data.src} answered ${res.status}`);
  const hash = createHash("sha256");
  for await (const chunk of res.body) hash.update(chunk);
  if (hash.digest("hex") !== createHash("sha256").update(file).digest("hex"))
    throw new Error(`${data.src} differs from the original`);
}

/**
 * One upload on a server of its own: workerd keeps the memory it has grown into, so on a shared
 * one each run's baseline and increase would depend on what ran before it.
 */
async function measure(ctx, log, config, verifyIt) {
  // No MEDIA_SERVICE_URL: nothing converts. The upload's image job (a PNG this size is beyond the
  // Worker's image budget) goes to the container binding, which is off locally, and fails at once.
  const server = config.minimal ? await startMinimal(ctx) : await startService(ctx);
  try {
    const file = largePng(config.bytes);
    const blob = new Blob([file]);
    const pids = workerdPids(server);
    const before = usage(pids);
    const clientCpu = process.cpuUsage();
    const sampler = sampleRss(pids, SAMPLE_MS);
    const result = await config.send(server, blob, file);
    const peak = sampler.stop();
    const { user, system } = process.cpuUsage(clientCpu);
    const cpu = usage(pids);
    // Let the upload's after-response work (its image job) end before the next request: under
    // wrangler dev, a request that arrives within about a second of a 200 MiB chunked upload's
    // response stalls until some other request comes in. What memory stays is of interest too.
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const after = usage(pids);
    log(
      `    ${fixed(2)(result.seconds)} s; Worker RSS ${mib(before.worker.rss)} -> peak ${mib(peak.worker)}, proxy -> ${mib(peak.proxy)}`,
    );
    // Outside the timed part: the stored file is the one sent.
    if (verifyIt && result.data) await verify(result.data, file);
    return {
      seconds: result.seconds,
      finishSeconds: result.finishSeconds,
      mibPerSecond: file.length / MiB / result.seconds,
      rss: {
        workerBefore: before.worker.rss,
        workerPeak: peak.worker,
        workerAfter: after.worker.rss,
        proxyBefore: before.proxy.rss,
        proxyPeak: peak.proxy,
      },
      cpuSeconds: {
        worker: cpu.worker.cpu - before.worker.cpu,
        proxy: cpu.proxy.cpu - before.proxy.cpu,
        client: (user + system) / 1e6,
      },
    };
  } finally {
    await server.stop();
  }
}

/**
 * Runs of one configuration ({ name, bytes, send(server, blob, file) }, send resolving
 * { data, seconds, finishSeconds }); the first one's stored file is checked against the original.
 */
export async function measureRuns(ctx, log, config, runs = RUNS) {
  const results = [];
  for (let i = 1; i <= runs; i++) {
    log(`  ${config.name}, ${mib(config.bytes)}, run ${i}/${runs}`);
    results.push(await measure(ctx, log, config, i === 1));
  }
  return results;
}

/** The service's pieces against the minimal Worker's parts, from the medians of their runs. */
function piecesAgainstBaseline(service, baseline) {
  const serviceMiBps = median(service.map((r) => r.mibPerSecond));
  const baselineMiBps = median(baseline.map((r) => r.mibPerSecond));
  const finishShare = median(service.map((r) => r.finishSeconds / r.seconds));
  return {
    serviceMiBps,
    baselineMiBps,
    ratio: serviceMiBps / baselineMiBps,
    finishShare,
    finishSeconds: median(service.map((r) => r.finishSeconds)),
    targets: { ratio: TARGET_RATIO, finishShare: TARGET_FINISH_SHARE },
  };
}

/**
 * 200 MiB in 40 pieces sent one at a time, through the service and through the minimal Worker
 * as R2 parts: { serviceMiBps, baselineMiBps, ratio, finishShare, finishSeconds, targets }.
 */
export async function measurePieces(ctx, log, { runs = RUNS } = {}) {
  const service = await measureRuns(ctx, log, byKey("chunkedSequential"), runs);
  const baseline = await measureRuns(ctx, log, byKey("minimalParts"), runs);
  return piecesAgainstBaseline(service, baseline);
}

const piecesReport = (p) =>
  table(
    `Pieces, sequential, against the minimal Worker writing them as R2 parts (targets: ratio >= ${p.targets.ratio}, finish share <= ${p.targets.finishShare * 100}%)`,
    [
      ["service MiB/s", (r) => fixed(1)(r.serviceMiBps)],
      ["baseline MiB/s", (r) => fixed(1)(r.baselineMiBps)],
      ["ratio", (r) => fixed(2)(r.ratio)],
      ["finish s", (r) => fixed(2)(r.finishSeconds)],
      ["finish share", (r) => `${fixed(1)(r.finishShare * 100)}%`],
    ],
    [p],
  );

export async function run(ctx, log) {
  const rows = [];
  const measured = {};
  for (const config of CONFIGS) {
    const runs = await measureRuns(ctx, log, config);
    measured[config.key] = runs;
    const med = (pick) => median(runs.map(pick));
    rows.push({
      key: config.key,
      name: config.name,
      bytes: config.bytes,
      requests: config.requests,
      seconds: med((r) => r.seconds),
      mibPerSecond: med((r) => r.mibPerSecond),
      finishSeconds: med((r) => r.finishSeconds),
      piecesSeconds: med((r) => r.seconds - r.finishSeconds),
      workerBeforeBytes: med((r) => r.rss.workerBefore),
      workerPeakBytes: med((r) => r.rss.workerPeak),
      workerIncreaseBytes: med((r) => r.rss.workerPeak - r.rss.workerBefore),
      workerAfterBytes: med((r) => r.rss.workerAfter),
      proxyBeforeBytes: med((r) => r.rss.proxyBefore),
      proxyPeakBytes: med((r) => r.rss.proxyPeak),
      workerCpuSeconds: med((r) => r.cpuSeconds.worker),
      proxyCpuSeconds: med((r) => r.cpuSeconds.proxy),
      clientCpuSeconds: med((r) => r.cpuSeconds.client),
      runs,
    });
  }

  const pieces = piecesAgainstBaseline(measured.chunkedSequential, measured.minimalParts);
  const report = [
    table(
      "Throughput, first request to last response (chunked: 40 pieces of 5 MiB, then POST /api with upload_id; finish: that last request)",
      [
        ["upload", (r) => r.name],
        ["file", (r) => mib(r.bytes)],
        ["requests", (r) => r.requests],
        ["total s", (r) => fixed(2)(r.seconds)],
        ["MiB/s", (r) => fixed(1)(r.mibPerSecond)],
        ["pieces s", (r) => fixed(2)(r.piecesSeconds)],
        ["finish s", (r) => fixed(2)(r.finishSeconds)],
        // With few runs the spread shows whether a difference is more than noise.
        ["MiB/s runs", (r) => r.runs.map((x) => fixed(1)(x.mibPerSecond)).join(" ")],
      ],
      rows,
    ),
    table(
      `Memory: RSS of the two workerd processes, sampled every ${SAMPLE_MS} ms (before: just before the upload; after: ${SETTLE_MS / 1000} s after its response)`,
      [
        ["upload", (r) => r.name],
        ["Worker before", (r) => mib(r.workerBeforeBytes)],
        ["Worker peak", (r) => mib(r.workerPeakBytes)],
        ["increase", (r) => mib(r.workerIncreaseBytes)],
        ["Worker after", (r) => mib(r.workerAfterBytes)],
        ["proxy before", (r) => mib(r.proxyBeforeBytes)],
        ["proxy peak", (r) => mib(r.proxyPeakBytes)],
        ["Worker peak runs", (r) => r.runs.map((x) => mib(x.rss.workerPeak)).join(", ")],
      ],
      rows,
    ),
    table(
      "CPU seconds during the upload (user + system; at most 1 per core per wall second); client: this Node process",
      [
        ["upload", (r) => r.name],
        ["wall s", (r) => fixed(2)(r.seconds)],
        ["Worker", (r) => fixed(2)(r.workerCpuSeconds)],
        ["proxy", (r) => fixed(2)(r.proxyCpuSeconds)],
        ["client", (r) => fixed(2)(r.clientCpuSeconds)],
      ],
      rows,
    ),
    piecesReport(pieces),
  ].join("\n");

  // Keyed by configuration, so results.json holds numbers only.
  const configs = Object.fromEntries(rows.map(({ key, name, ...numbers }) => [key, numbers]));
  const { targets, ...piecesNumbers } = pieces;
  return {
    report,
    results: { runs: RUNS, sampleMs: SAMPLE_MS, settleMs: SETTLE_MS, ...configs, pieces: piecesNumbers },
  };
}
