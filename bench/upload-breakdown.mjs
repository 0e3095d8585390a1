// Where a 3 KiB upload's time goes, operation by operation. Uploads are sent one at a time to the
// service wrapped in counting bindings (test/worker/capacity/counting-worker.ts, which sums the
// time each D1, R2 and Durable Object call waits) and to the minimal Worker's floor (POST /uf,
// which reports its own D1 and R2 waits in Server-Timing). What is not waiting on storage is the
// Worker's own work (routing, the key, the multipart body, type and metadata checks, hashing,
// the in-request thumbnail) plus the local runtime's dispatch, which both sides pay.
import { fixed, makePng, multipartBody, startMinimal, startService, table } from "./lib.mjs";

const SMALL_BYTES = 3 * 1024;
const WARMUP_UPLOADS = 20;
const COUNTING_WORKER = "test/worker/capacity/counting-worker.ts";

async function send(url, headers, body) {
  const started = performance.now();
  const res = await fetch(url, { method: "POST", headers, body });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`POST ${url}: ${res.status}`);
  return { ms: performance.now() - started, timing: res.headers.get("Server-Timing") ?? "" };
}

async function costsSinceLast(service) {
  for (let i = 0; i < 200; i++) {
    const res = await fetch(`${service.url}/__costs`);
    if (res.status === 200) return res.json();
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("the uploads' work after their responses did not end");
}

const serverTiming = (header, name) => Number(new RegExp(`${name};dur=([\\d.]+)`).exec(header)?.[1] ?? 0);

/**
 * `uploads` uploads to each, one at a time, after a warm-up: per upload, the mean time of the
 * whole request and of each kind of storage call. Resolves { rows, service, floor }.
 */
export async function uploadBreakdown(ctx, log, { uploads = 200 } = {}) {
  const service = await startService(ctx, { script: COUNTING_WORKER });
  const minimal = await startMinimal(ctx);
  const file = { field: "uploads", filename: "small.png", type: "image/png", data: makePng(SMALL_BYTES) };
  const { body, contentType } = multipartBody({ allow_duplicate: "1" }, file);
  const serviceHeaders = { "X-API-Key": service.fullKey, "Content-Type": contentType };
  const floorHeaders = { "X-API-Key": service.fullKey, "Content-Type": contentType };

  log(`  upload breakdown: ${uploads} uploads one at a time to each`);
  for (let i = 0; i < WARMUP_UPLOADS; i++) {
    await send(`${service.url}/api`, serviceHeaders, body);
    await send(`${minimal.url}/uf`, floorHeaders, body);
  }
  await costsSinceLast(service);
  const s = { ms: 0 };
  const f = { ms: 0, d1: 0, r2: 0 };
  // Alternated, so drift is fair to both.
  for (let i = 0; i < uploads; i++) {
    s.ms += (await send(`${service.url}/api`, serviceHeaders, body)).ms;
    const floor = await send(`${minimal.url}/uf`, floorHeaders, body);
    f.ms += floor.ms;
    f.d1 += serverTiming(floor.timing, "d1");
    f.r2 += serverTiming(floor.timing, "r2");
  }
  const costs = await costsSinceLast(service);
  const per = (n) => n / uploads;
  const serviceWaits = costs.d1Ms + costs.r2Ms + costs.rateLimiterMs;
  const rows = [
    {
      what: "D1",
      service: per(costs.d1Ms),
      serviceCalls: `${fixed(1)(per(costs.d1Statements))} statements in ${fixed(1)(per(costs.d1RoundTrips))} trips`,
      floor: per(f.d1),
      floorCalls: "3 statements in 3 trips",
    },
    {
      what: "R2",
      service: per(costs.r2Ms),
      serviceCalls: `${fixed(1)(per(costs.r2ClassA + costs.r2ClassB + costs.r2Free))} calls`,
      floor: per(f.r2),
      floorCalls: "2 puts",
    },
    {
      what: "RATE_LIMITER",
      service: per(costs.rateLimiterMs),
      serviceCalls: `${fixed(1)(per(costs.rateLimiterCalls))} calls`,
      floor: 0,
      floorCalls: "-",
    },
    {
      what: "the Worker's own work and dispatch",
      service: per(s.ms - serviceWaits),
      serviceCalls: "",
      floor: per(f.ms - f.d1 - f.r2),
      floorCalls: "",
    },
    { what: "whole request", service: per(s.ms), serviceCalls: "", floor: per(f.ms), floorCalls: "" },
  ];
  const report = table(
    `Where a 3 KiB upload's time goes: ms per upload, one at a time (${uploads} each; the service counted by ${COUNTING_WORKER})`,
    [
      ["", (r) => r.what],
      ["service ms", (r) => fixed(2)(r.service)],
      ["service calls", (r) => r.serviceCalls],
      ["floor ms", (r) => fixed(2)(r.floor)],
      ["floor calls", (r) => r.floorCalls],
      ["difference ms", (r) => fixed(2)(r.service - r.floor)],
    ],
    rows,
  );
  await service.stop();
  await minimal.stop();
  return { report, rows, costs, uploads };
}
