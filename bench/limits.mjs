// The rate limiter's cost per request: the same read (GET /api/{id}) against the service with
// limits on (two Durable Object calls per request: the key's, then the IP's) and with them off,
// one after the other in the same run.
import { fixed, load, makePng, startService, table, upload } from "./lib.mjs";

export const description = "latency the rate limiter adds to a request (limits on vs off)";

const CONCURRENCY = [1, 10];
/** Limits high enough that the load never reaches them: what is measured is the counting. */
const UNREACHABLE = {
  RATE_LIMITS: "on",
  RATE_LIMIT_PER_MINUTE: "100000000",
  RATE_LIMIT_FULL_KEY_PER_DAY: "100000000",
  RATE_LIMIT_IP_PER_DAY: "100000000",
};

async function measure(service, connections) {
  const file = { field: "uploads", filename: "read.png", type: "image/png", data: makePng(2048) };
  const { id } = await upload(service, file, { allow_duplicate: "1" });
  return load({
    url: `${service.url}/api/${id}`,
    connections,
    headers: { "X-API-Key": service.fullKey, "CF-Connecting-IP": "198.51.100.1" },
  });
}

export async function run(ctx, log) {
  const on = await startService(ctx, { vars: UNREACHABLE });
  const off = await startService(ctx, { vars: { RATE_LIMITS: "off" } });
  const rows = [];
  for (const connections of CONCURRENCY) {
    log(`  limits off, ${connections} connection(s)`);
    const without = await measure(off, connections);
    log(`  limits on, ${connections} connection(s)`);
    const withLimits = await measure(on, connections);
    if (without.non2xx || withLimits.non2xx)
      throw new Error(
        `unexpected non-2xx answers: off ${JSON.stringify(without.statuses)}, on ${JSON.stringify(withLimits.statuses)}`,
      );
    rows.push({ connections, off: without, on: withLimits });
  }
  const report = table(
    "GET /api/{id} with a full key (ms; added = on - off)",
    [
      ["conns", (r) => r.connections],
      ["off p50", (r) => r.off.latencyMs.p50],
      ["on p50", (r) => r.on.latencyMs.p50],
      ["added p50", (r) => r.on.latencyMs.p50 - r.off.latencyMs.p50],
      ["off p99", (r) => r.off.latencyMs.p99],
      ["on p99", (r) => r.on.latencyMs.p99],
      ["added p99", (r) => r.on.latencyMs.p99 - r.off.latencyMs.p99],
      ["off req/s", (r) => fixed(1)(r.off.rps)],
      ["on req/s", (r) => fixed(1)(r.on.rps)],
    ],
    rows,
  );
  return { report, results: rows };
}
