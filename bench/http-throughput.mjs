// HTTP throughput: small-image uploads compared with a minimal Worker that puts the same
// multipart request's file into R2, and src GETs of a 100 KB file compared with the same Worker
// streaming the same bytes from R2; the minimal Worker does nothing else.
import { fixed, kib, load, makePng, multipartBody, ratio, startMinimal, startService, table, upload } from "./lib.mjs";

export const description = "uploads and src GETs vs a minimal R2 Worker";

const CONCURRENCY = [1, 10, 50];
const SMALL_BYTES = 3 * 1024;
const FILE_BYTES = 100 * 1024;

const resultColumns = [
  ["conns", (r) => r.connections],
  ["req/s", (r) => fixed(1)(r.rps)],
  ["p50 ms", (r) => r.latencyMs.p50],
  ["p99 ms", (r) => r.latencyMs.p99],
  ["mean ms", (r) => fixed(2)(r.latencyMs.mean)],
  ["requests", (r) => r.requests],
  ["non-2xx", (r) => r.non2xx],
  ["errors", (r) => r.errors],
];

const ratioColumns = [
  ["conns", (r) => r.connections],
  ["req/s ratio", (r) => fixed(2)(r.rps)],
  ["p50 ratio", (r) => fixed(2)(r.p50)],
  ["p99 ratio", (r) => fixed(2)(r.p99)],
];

/** Service / baseline at each connection count: req/s < 1 and latency > 1 mean the service is slower. */
const overheadOf = (measured, baseline) =>
  measured.map((m, i) => ({
    connections: m.connections,
    rps: ratio(m.rps, baseline[i].rps),
    p50: ratio(m.latencyMs.p50, baseline[i].latencyMs.p50),
    p99: ratio(m.latencyMs.p99, baseline[i].latencyMs.p99),
  }));

/** The service's 3 KiB upload should reach at least half the bare R2 put's req/s at 10 connections. */
export const UPLOAD_RATIO_TARGET = 0.5;

/**
 * One multipart request of a fresh small PNG, as autocannon sends it to the service (POST /api)
 * and to the minimal Worker (POST /u). Each is sent once first, so a broken path fails with its
 * message rather than as a run of non-2xx.
 */
async function smallUploadRequests(service, minimal) {
  const smallFile = { field: "uploads", filename: "small.png", type: "image/png", data: makePng(SMALL_BYTES) };
  const { body, contentType } = multipartBody({ allow_duplicate: "1" }, smallFile);
  await upload(service, smallFile, { allow_duplicate: "1" });
  const put = await fetch(`${minimal.url}/u`, { method: "POST", headers: { "Content-Type": contentType }, body });
  if (put.status !== 200) throw new Error(`minimal worker upload failed: ${put.status} ${await put.text()}`);
  const request = (url, headers = {}) => ({ url, method: "POST", headers: { ...headers, "Content-Type": contentType }, body });
  return {
    fileBytes: smallFile.data.length,
    service: request(`${service.url}/api`, { "X-API-Key": service.fullKey }),
    minimal: request(`${minimal.url}/u`),
  };
}

/** Service and baseline uploads alternated at each connection count, so drift is fair to both. */
async function compareUploads(requests, concurrency, log) {
  const uploads = [];
  const uploadBaseline = [];
  for (const connections of concurrency) {
    log(`  upload, ${connections} connection(s)`);
    uploads.push(await load({ ...requests.service, connections }));
    log(`  minimal upload, ${connections} connection(s)`);
    uploadBaseline.push(await load({ ...requests.minimal, connections }));
  }
  return { uploads, uploadBaseline, uploadOverhead: overheadOf(uploads, uploadBaseline) };
}

/**
 * The upload target alone, for other suites: the service's and the bare R2 put's req/s for the
 * 3 KiB upload at 10 connections. Resolves { ratio, target, met, service, baseline }.
 */
export async function measureUploadRatio(ctx, log = () => {}) {
  const requests = await smallUploadRequests(await startService(ctx), await startMinimal(ctx));
  const { uploads, uploadBaseline, uploadOverhead } = await compareUploads(requests, [10], log);
  const measured = uploadOverhead[0].rps;
  return { ratio: measured, target: UPLOAD_RATIO_TARGET, met: measured >= UPLOAD_RATIO_TARGET, service: uploads[0], baseline: uploadBaseline[0] };
}

/** A GET that must succeed whole; loads only start once both targets pass it. */
async function fetchWhole(url) {
  const res = await fetch(url);
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200 || res.headers.get("content-length") !== String(body.length)) {
    throw new Error(`${url} answered ${res.status} with ${body.length} bytes (Content-Length ${res.headers.get("content-length")})`);
  }
  return body;
}

export async function run(ctx, log) {
  const service = await startService(ctx);
  const minimal = await startMinimal(ctx);

  const uploadRequests = await smallUploadRequests(service, minimal);

  const file = makePng(FILE_BYTES);
  const uploaded = await upload(service, { field: "uploads", filename: "file.png", type: "image/png", data: file });
  // The baseline serves what the service stores, byte for byte, whatever the service did to it.
  const stored = await fetchWhole(uploaded.src);
  const minimalUrl = `${minimal.url}/o/file.png`;
  const put = await fetch(minimalUrl, { method: "PUT", headers: { "Content-Type": "image/png" }, body: stored });
  if (put.status !== 201) throw new Error(`minimal worker PUT failed: ${put.status} ${await put.text()}`);
  if (!(await fetchWhole(minimalUrl)).equals(stored)) throw new Error("minimal worker serves other bytes than the service");

  const { uploads, uploadBaseline, uploadOverhead } = await compareUploads(uploadRequests, CONCURRENCY, log);
  // Alternating src and minimal at each level keeps any drift (thermal, growing state) fair to both.
  const src = [];
  const baseline = [];
  for (const connections of CONCURRENCY) {
    log(`  src GET, ${connections} connection(s)`);
    src.push(await load({ url: uploaded.src, connections }));
    log(`  minimal GET, ${connections} connection(s)`);
    baseline.push(await load({ url: minimalUrl, connections }));
  }
  const overhead = src.map((s, i) => ({
    connections: s.connections,
    rps: ratio(s.rps, baseline[i].rps),
    p50: ratio(s.latencyMs.p50, baseline[i].latencyMs.p50),
    p99: ratio(s.latencyMs.p99, baseline[i].latencyMs.p99),
  }));

  const report = [
    table(`Upload: POST /api, ${kib(uploadRequests.fileBytes)} PNG, allow_duplicate=1`, resultColumns, uploads),
    table(`Baseline upload: the same multipart request to the minimal Worker, file put into R2`, resultColumns, uploadBaseline),
    table(`Upload vs baseline (service / minimal; target: req/s ratio >= ${UPLOAD_RATIO_TARGET} at 10 connections)`, ratioColumns, uploadOverhead),
    table(`src GET: ${kib(stored.length)} PNG via /i/:id (service)`, resultColumns, src),
    table(`Baseline GET: same ${kib(stored.length)} object via minimal R2 Worker`, resultColumns, baseline),
    table("Overhead of src GET vs minimal Worker (service / minimal; req/s < 1 and latency > 1 mean slower)", [
      ["conns", (r) => r.connections],
      ["req/s ratio", (r) => fixed(2)(r.rps)],
      ["p50 ratio", (r) => fixed(2)(r.p50)],
      ["p99 ratio", (r) => fixed(2)(r.p99)],
    ], overhead),
  ].join("\n");

  return {
    report,
    results: {
      uploadFileBytes: uploadRequests.fileBytes,
      getFileBytes: stored.length,
      upload: uploads,
      uploadBaseline,
      uploadOverhead,
      srcGet: src,
      minimalGet: baseline,
      overhead,
    },
  };
}
