// webhooks: a burst of small uploads to an account with one webhook endpoint taking every event,
// delivered through the local queue to a receiver on loopback: the events delivered per second,
// and what each event costs in D1 (statements, rows written) and Queue operations (written, read,
// deleted), from the service wrapped in counting bindings (test/worker/capacity/counting-worker.ts,
// which counts the queue consumer's batches too). The same uploads without an endpoint, first,
// give the upload's own cost, which is subtracted.
//   BENCH_WEBHOOK_UPLOADS  uploads in the burst (default 1000)
import http from "node:http";
import { fixed, makePng, multipartBody, startService, table } from "./lib.mjs";

const UPLOADS = Math.max(10, Number(process.env.BENCH_WEBHOOK_UPLOADS || 1000));
const BASELINE_UPLOADS = 100;
const CONNECTIONS = 10;
const COUNTING_WORKER = "test/worker/capacity/counting-worker.ts";
/** A small image is ready in its own request: each upload is an upload.created and an upload.ready. */
const EVENTS_PER_UPLOAD = 2;

export const description = `${UPLOADS} uploads, each an upload.created and an upload.ready, to one endpoint`;
export const settings = `${CONNECTIONS} connections, a 3 KiB PNG each, a receiver on loopback answering 200 at once`;

/** A receiver that counts what it is sent and when. */
async function startReceiver(ctx) {
  const seen = { count: 0, first: 0, last: 0, types: new Map() };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const now = performance.now();
      seen.count++;
      seen.first ||= now;
      seen.last = now;
      const { type } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      seen.types.set(type, (seen.types.get(type) ?? 0) + 1);
      res.writeHead(200).end("ok");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  ctx.defer(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${server.address().port}/hook`, seen };
}

async function costsSinceLast(service) {
  for (let i = 0; i < 2400; i++) {
    const res = await fetch(`${service.url}/__costs`);
    if (res.status === 200) return res.json();
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("the work after the uploads' responses did not end");
}

/** `count` uploads over CONNECTIONS connections; resolves when every answer is in. */
async function burst(service, count) {
  const file = { field: "uploads", filename: "small.png", type: "image/png", data: makePng(3 * 1024) };
  const { body, contentType } = multipartBody({ allow_duplicate: "1" }, file);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      const res = await fetch(`${service.url}/api`, {
        method: "POST",
        headers: { "X-API-Key": service.fullKey, "Content-Type": contentType },
        body,
      });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`upload answered ${res.status}`);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
}

async function until(what, check, ms, progress) {
  const end = Date.now() + ms;
  let told = Date.now();
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    if (Date.now() - told > 10_000) {
      told = Date.now();
      progress();
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function run(ctx, log) {
  const receiver = await startReceiver(ctx);
  const service = await startService(ctx, { script: COUNTING_WORKER, vars: { UNSAFE_ALLOW_LOOPBACK_LINKS: "true" } });

  log(`  webhooks: ${BASELINE_UPLOADS} uploads without an endpoint (the upload's own cost)`);
  await burst(service, 20);
  await costsSinceLast(service);
  await burst(service, BASELINE_UPLOADS);
  const baseline = await costsSinceLast(service);
  const perUpload = (field) => baseline[field] / BASELINE_UPLOADS;

  const created = await fetch(`${service.url}/api/webhooks`, {
    method: "POST",
    headers: { "X-API-Key": service.fullKey, "Content-Type": "application/json" },
    body: JSON.stringify({ url: receiver.url, description: "bench" }),
  });
  if (created.status !== 201 && created.status !== 200)
    throw new Error(`endpoint: ${created.status} ${await created.text()}`);
  await costsSinceLast(service);

  log(`  webhooks: ${UPLOADS} uploads, ${UPLOADS * EVENTS_PER_UPLOAD} events to deliver`);
  const start = performance.now();
  await burst(service, UPLOADS);
  const uploaded = performance.now();
  const events = UPLOADS * EVENTS_PER_UPLOAD;
  await until(
    `${events} deliveries`,
    () => receiver.seen.count >= events,
    10 * 60_000,
    () => log(`    ${receiver.seen.count} delivered`),
  ).catch((error) => {
    log(service.output());
    throw error;
  });
  const costs = await costsSinceLast(service);
  const seconds = (receiver.seen.last - start) / 1000;
  const beyond = (field) => (costs[field] - perUpload(field) * UPLOADS) / events;

  const rows = [
    { measure: "uploads per second (the burst)", value: fixed(1)(UPLOADS / ((uploaded - start) / 1000)) },
    { measure: "events delivered per second (first upload to last delivery)", value: fixed(1)(events / seconds) },
    {
      measure: "last delivery after the last upload's answer (s)",
      value: fixed(2)((receiver.seen.last - uploaded) / 1000),
    },
    { measure: "events received (each type)", value: [...receiver.seen.types].map(([t, n]) => `${t} ${n}`).join(", ") },
    { measure: "D1 statements per event", value: fixed(2)(beyond("d1Statements")) },
    { measure: "D1 round trips per event", value: fixed(2)(beyond("d1RoundTrips")) },
    { measure: "D1 rows written per event", value: fixed(2)(beyond("d1RowsWritten")) },
    { measure: "D1 rows read per event", value: fixed(2)(beyond("d1RowsRead")) },
    {
      measure: "Queue writes / reads / deletes per event",
      value: `${fixed(2)(beyond("queueWrites"))} / ${fixed(2)(beyond("queueReads"))} / ${fixed(2)(beyond("queueDeletes"))}`,
    },
    { measure: "an upload's own D1 rows written, without an endpoint", value: fixed(2)(perUpload("d1RowsWritten")) },
  ];
  const report = table(
    "webhooks",
    [
      ["measure", (r) => r.measure],
      ["value", (r) => r.value],
    ],
    rows,
  );
  return { report, results: { uploads: UPLOADS, events, seconds, costs, baseline } };
}
