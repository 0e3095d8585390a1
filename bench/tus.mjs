// tus: a 200 MiB file through /api/tus with tus-js-client 4.3.1, in requests of 50 MiB (under the
// 100 MB a Cloudflare request may carry on most plans) and of 5 MiB, against the same bytes in
// 40 pieces through POST /api/chunk finished by POST /api with upload_id (bench/large.mjs's
// sequential pieces). Each run gets a fresh server without a media service, its stored file is
// checked (SHA-256), and wrangler dev's workerd processes are measured as the large suite does.
import * as tus from "tus-js-client";
import { byKey, measureRuns } from "./large.mjs";
import { fixed, median, mib, table } from "./lib.mjs";

const RUNS = Math.max(1, Number(process.env.BENCH_TUS_RUNS || 2));
const MiB = 1024 * 1024;
const BYTES = 200 * MiB;

export const description = "200 MiB through tus (tus-js-client, 50 MiB and 5 MiB requests) against 40 pieces";
export const settings = `median of ${RUNS} run${RUNS === 1 ? "" : "s"} of each, a fresh server each; MB/s means MiB/s`;

/** The file through tus-js-client in requests of `chunkSize`, timed from the creation to the last answer. */
async function viaTus(server, file, chunkSize) {
  const start = performance.now();
  let lastSent = start;
  const { url, end } = await new Promise((resolve, reject) => {
    // In Node it takes a Buffer (or a stream): the same bytes, not copied.
    const upload = new tus.Upload(Buffer.from(file.buffer, file.byteOffset, file.byteLength), {
      endpoint: `${server.url}/api/tus`,
      headers: { "X-API-Key": server.fullKey },
      metadata: { filename: "large.png", keep_original: "1" },
      chunkSize,
      // A retry would be timed as part of the upload: the run fails instead.
      retryDelays: null,
      onBeforeRequest() {
        lastSent = performance.now();
      },
      onSuccess: () => resolve({ url: upload.url, end: performance.now() }),
      onError: reject,
    });
    upload.start();
  });
  // Outside the timed part: the upload it became, as its tus URL answers it.
  const res = await fetch(url, { headers: { "X-API-Key": server.fullKey, "Tus-Resumable": "1.0.0" } });
  const json = await res.json().catch(() => null);
  if (res.status !== 200 || json?.type !== "success") {
    throw new Error(`GET ${url} answered ${res.status}: ${JSON.stringify(json)}`);
  }
  return { data: json.data, seconds: (end - start) / 1000, finishSeconds: (end - lastSent) / 1000 };
}

const CONFIGS = [
  {
    key: "tus50",
    name: "tus, 50 MiB requests",
    bytes: BYTES,
    requests: 1 + BYTES / (50 * MiB),
    send: (server, _blob, file) => viaTus(server, file, 50 * MiB),
  },
  {
    key: "tus5",
    name: "tus, 5 MiB requests",
    bytes: BYTES,
    requests: 1 + BYTES / (5 * MiB),
    send: (server, _blob, file) => viaTus(server, file, 5 * MiB),
  },
  { ...byKey("chunkedSequential"), key: "pieces", name: "pieces, 5 MiB, sequential" },
];

export async function run(ctx, log) {
  const rows = [];
  for (const config of CONFIGS) {
    const runs = await measureRuns(ctx, log, config, RUNS);
    const med = (pick) => median(runs.map(pick));
    rows.push({
      key: config.key,
      name: config.name,
      requests: config.requests,
      seconds: med((r) => r.seconds),
      mibPerSecond: med((r) => r.mibPerSecond),
      lastRequestSeconds: med((r) => r.finishSeconds),
      workerCpuSeconds: med((r) => r.cpuSeconds.worker),
      workerPeakBytes: med((r) => r.rss.workerPeak),
      runs,
    });
  }
  const pieces = rows.find((r) => r.key === "pieces");
  for (const row of rows) row.ofPieces = row.mibPerSecond / pieces.mibPerSecond;
  const report = table(
    "200 MiB, first request to last answer (last request: for tus its bytes and the finish, for pieces the finish)",
    [
      ["upload", (r) => r.name],
      ["requests", (r) => r.requests],
      ["wall s", (r) => fixed(2)(r.seconds)],
      ["MiB/s", (r) => fixed(1)(r.mibPerSecond)],
      ["tus/pieces", (r) => fixed(2)(r.ofPieces)],
      ["last request s", (r) => fixed(2)(r.lastRequestSeconds)],
      ["Worker CPU s", (r) => fixed(2)(r.workerCpuSeconds)],
      ["Worker peak", (r) => mib(r.workerPeakBytes)],
      ["MiB/s runs", (r) => r.runs.map((x) => fixed(1)(x.mibPerSecond)).join(" ")],
    ],
    rows,
  );
  const results = Object.fromEntries(rows.map(({ key, name, ...numbers }) => [key, numbers]));
  return { report, results: { runs: RUNS, bytes: BYTES, ...results } };
}
