// HTTP throughput: small-image uploads, and src GETs of a 100 KB file compared with a minimal
// Worker that streams the same bytes from R2 and does nothing else.
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

  const small = makePng(SMALL_BYTES);
  const smallFile = { field: "uploads", filename: "small.png", type: "image/png", data: small };
  const uploadBody = multipartBody({ allow_duplicate: "1" }, smallFile);
  const uploadRequest = {
    url: `${service.url}/api`,
    method: "POST",
    headers: { "X-API-Key": service.fullKey, "Content-Type": uploadBody.contentType },
    body: uploadBody.body,
  };
  // One request outside the load run, so a broken upload path fails with its message.
  await upload(service, smallFile, { allow_duplicate: "1" });

  const file = makePng(FILE_BYTES);
  const uploaded = await upload(service, { field: "uploads", filename: "file.png", type: "image/png", data: file });
  // The baseline serves what the service stores, byte for byte, whatever the service did to it.
  const stored = await fetchWhole(uploaded.src);
  const minimalUrl = `${minimal.url}/o/file.png`;
  const put = await fetch(minimalUrl, { method: "PUT", headers: { "Content-Type": "image/png" }, body: stored });
  if (put.status !== 201) throw new Error(`minimal worker PUT failed: ${put.status} ${await put.text()}`);
  if (!(await fetchWhole(minimalUrl)).equals(stored)) throw new Error("minimal worker serves other bytes than the service");

  const uploads = [];
  for (const connections of CONCURRENCY) {
    log(`  upload, ${connections} connection(s)`);
    uploads.push(await load({ ...uploadRequest, connections }));
  }
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
    table(`Upload: POST /api, ${kib(small.length)} PNG, allow_duplicate=1`, resultColumns, uploads),
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
      uploadFileBytes: small.length,
      getFileBytes: stored.length,
      upload: uploads,
      srcGet: src,
      minimalGet: baseline,
      overhead,
    },
  };
}
