// HTTP throughput: small-image uploads compared with a minimal Worker that puts the same
// multipart request's file into R2, and GETs of a 100 KiB file's src, path and thumb, each
// compared with the same Worker streaming the same bytes from R2; it does nothing else.
import { fixed, kib, load, makePng, multipartBody, ratio, startMinimal, startService, table, upload } from "./lib.mjs";

export const description = "uploads, and src, path and thumb GETs vs a minimal R2 Worker";

const CONCURRENCY = [1, 10, 50];
const SMALL_BYTES = 3 * 1024;
const FILE_BYTES = 100 * 1024;
const URL_KINDS = ["src", "path", "thumb"];

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
  ["url", (r) => r.url],
  ["conns", (r) => r.connections],
  ["req/s ratio", (r) => fixed(2)(r.rps)],
  ["p50 ratio", (r) => fixed(2)(r.p50)],
  ["p99 ratio", (r) => fixed(2)(r.p99)],
];

/** Service / baseline at each connection count: req/s < 1 and latency > 1 mean the service is slower. */
const overheadOf = (measured, baseline) =>
  measured.map((m, i) => ({
    url: "upload",
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
  for (const path of ["/u", "/uf"]) {
    const put = await fetch(`${minimal.url}${path}`, {
      method: "POST",
      headers: { "Content-Type": contentType },
      body,
    });
    if (put.status !== 200) throw new Error(`minimal worker ${path} failed: ${put.status} ${await put.text()}`);
  }
  const request = (url, headers = {}) => ({
    url,
    method: "POST",
    headers: { ...headers, "Content-Type": contentType },
    body,
  });
  return {
    fileBytes: smallFile.data.length,
    service: request(`${service.url}/api`, { "X-API-Key": service.fullKey }),
    minimal: request(`${minimal.url}/u`),
    floor: request(`${minimal.url}/uf`, { "X-API-Key": service.fullKey }),
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
  log("  minimal upload with the required storage work (floor), 10 connection(s)");
  const floor = await load({ ...requests.floor, connections: 10 });
  const measured = uploadOverhead[0].rps;
  return {
    ratio: measured,
    target: UPLOAD_RATIO_TARGET,
    met: measured >= UPLOAD_RATIO_TARGET,
    service: uploads[0],
    baseline: uploadBaseline[0],
    floor,
    floorRatio: ratio(floor.rps, uploadBaseline[0].rps),
  };
}

/** A GET that must succeed whole; loads only start once both targets pass it. */
async function fetchWhole(url) {
  const res = await fetch(url);
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200 || res.headers.get("content-length") !== String(body.length)) {
    throw new Error(
      `${url} answered ${res.status} with ${body.length} bytes (Content-Length ${res.headers.get("content-length")})`,
    );
  }
  return body;
}

/** The upload as the API describes it once its thumbnail is made (the media job runs after the response). */
async function withThumbnail(service, id) {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    const res = await fetch(`${service.url}/api/${id}`, { headers: { "X-API-Key": service.fullKey } });
    const { data } = await res.json();
    if (data?.thumb) return data;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`upload ${id} got no thumbnail within a minute`);
}

/** Stores `bytes` on the minimal Worker under `name` and checks it serves them back; resolves its URL. */
async function mirror(minimal, name, type, bytes) {
  const url = `${minimal.url}/o/${name}`;
  const put = await fetch(url, { method: "PUT", headers: { "Content-Type": type }, body: bytes });
  if (put.status !== 201) throw new Error(`minimal worker PUT failed: ${put.status} ${await put.text()}`);
  if (!(await fetchWhole(url)).equals(bytes)) throw new Error("minimal worker serves other bytes than the service");
  return url;
}

/**
 * The service and the minimal Worker, with a 100 KiB PNG uploaded and its thumbnail made, and
 * each stored file mirrored byte for byte on the minimal Worker (the baseline serves what the
 * service stores, whatever the service did to it). `targets[kind]` is { url, baseline, bytes }.
 */
async function prepare(ctx, kinds) {
  const service = await startService(ctx);
  const minimal = await startMinimal(ctx);
  const created = await upload(service, {
    field: "uploads",
    filename: "file.png",
    type: "image/png",
    data: makePng(FILE_BYTES),
  });
  const uploaded = kinds.includes("thumb") ? await withThumbnail(service, created.id) : created;
  const targets = {};
  for (const kind of kinds) {
    const bytes = await fetchWhole(uploaded[kind]);
    const name = kind === "thumb" ? "thumb.webp" : "file.png";
    targets[kind] = {
      url: uploaded[kind],
      baseline: await mirror(minimal, name, kind === "thumb" ? "image/webp" : "image/png", bytes),
      bytes,
    };
  }
  return { service, minimal, targets };
}

/**
 * Each URL kind against the minimal Worker serving the same bytes, level by level. Alternating
 * the two at each level keeps any drift (thermal, growing state) fair to both.
 */
async function compare(targets, kinds, levels, log) {
  const rows = { service: [], baseline: [], ratios: [] };
  for (const connections of levels) {
    for (const kind of kinds) {
      const { url, baseline } = targets[kind];
      log(`  ${kind} GET, ${connections} connection(s)`);
      const s = { kind, ...(await load({ url, connections })) };
      log(`  minimal GET (${kind} bytes), ${connections} connection(s)`);
      const b = { kind, ...(await load({ url: baseline, connections })) };
      rows.service.push(s);
      rows.baseline.push(b);
      rows.ratios.push({
        url: kind,
        connections,
        rps: ratio(s.rps, b.rps),
        p50: ratio(s.latencyMs.p50, b.latencyMs.p50),
        p99: ratio(s.latencyMs.p99, b.latencyMs.p99),
      });
    }
  }
  return rows;
}

/**
 * src's req/s as a fraction of the minimal Worker's, at 10 and 50 connections, for suites that
 * check it: resolves [{ connections, rps, p50, p99 }] (ratios) and the raw runs.
 */
export async function measureSrcRatio(ctx, log = () => {}) {
  const { targets } = await prepare(ctx, ["src"]);
  const rows = await compare(targets, ["src"], [10, 50], log);
  return { ratios: rows.ratios.map(({ url, ...r }) => r), srcGet: rows.service, minimalGet: rows.baseline };
}

export async function run(ctx, log) {
  const { service, minimal, targets } = await prepare(ctx, URL_KINDS);
  // GETs first: every upload below leaves a thumbnail job running after its response.
  const gets = await compare(targets, URL_KINDS, CONCURRENCY, log);

  const uploadRequests = await smallUploadRequests(service, minimal);
  const { uploads, uploadBaseline, uploadOverhead } = await compareUploads(uploadRequests, CONCURRENCY, log);

  const of = (rows, kind) => rows.filter((r) => r.kind === kind);
  const report = [
    table(`Upload: POST /api, ${kib(uploadRequests.fileBytes)} PNG, allow_duplicate=1`, resultColumns, uploads),
    table(
      `Baseline upload: the same multipart request to the minimal Worker, file put into R2`,
      resultColumns,
      uploadBaseline,
    ),
    table(
      `Upload vs baseline (service / minimal; target: req/s ratio >= ${UPLOAD_RATIO_TARGET} at 10 connections)`,
      ratioColumns,
      uploadOverhead,
    ),
    ...URL_KINDS.flatMap((kind) => [
      table(`${kind} GET: ${kib(targets[kind].bytes.length)} via the service`, resultColumns, of(gets.service, kind)),
      table(
        `Baseline GET: the same ${kib(targets[kind].bytes.length)} via the minimal R2 Worker`,
        resultColumns,
        of(gets.baseline, kind),
      ),
    ]),
    table("Service / minimal Worker (req/s < 1 and latency > 1 mean slower)", ratioColumns, gets.ratios),
  ].join("\n");

  return {
    report,
    results: {
      uploadFileBytes: uploadRequests.fileBytes,
      getFileBytes: Object.fromEntries(URL_KINDS.map((kind) => [kind, targets[kind].bytes.length])),
      upload: uploads,
      uploadBaseline,
      uploadOverhead,
      get: gets.service,
      minimalGet: gets.baseline,
      overhead: gets.ratios,
    },
  };
}
