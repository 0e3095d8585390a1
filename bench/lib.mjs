// Helpers shared by the benchmark suites: local servers, accounts, request bodies, load runs,
// process memory and plain-text tables.
import { execFile } from "node:child_process";
import { randomBytes, randomFillSync } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { deflateSync } from "node:zlib";
import autocannon from "autocannon";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { createAccount } from "../scripts/lib/accounts.mjs";
import { bundleForNode } from "../scripts/lib/bundle.mjs";
import { startMediaService } from "../scripts/lib/media.mjs";
import { freePort, ROOT, startServer } from "../scripts/lib/server.mjs";
import { ihdr, pngChunk, pngFile } from "../test/support/build.ts";

/** IHDR's colour type of truecolour pixels without alpha. */
const RGB = 2;

export { ROOT };

/** Duration of each measured run and of the warm-up before it, in seconds. */
export const DURATION = Number(process.env.BENCH_DURATION || 5);
export const WARMUP = Number(process.env.BENCH_WARMUP || 1);

/**
 * Cleanup registry for one `npm run bench`: suites register what they start, run.mjs undoes it
 * in reverse order, on success, failure or Ctrl+C.
 */
export function createContext() {
  const undo = [];
  return {
    defer: (fn) => undo.push(fn),
    async cleanup() {
      while (undo.length) {
        try {
          await undo.pop()();
        } catch (error) {
          console.error(`cleanup: ${error}`);
        }
      }
    },
  };
}

export async function tempDir(ctx, prefix) {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  ctx.defer(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Start servers one at a time: wrangler instances starting together can race for the same
 * free port (inspector or runtime), and one of them then exits. The retry covers that race
 * with wrangler processes outside this run.
 */
async function start(ctx, name, options) {
  for (let attempt = 1; ; attempt++) {
    const stateDir = await tempDir(ctx, `bench-${name}-`);
    try {
      const server = await startServer({ port: await freePort(), stateDir, ...options });
      ctx.defer(server.stop);
      return server;
    } catch (error) {
      if (attempt === 2 || !/exited/.test(String(error))) throw error;
      console.error(`${name} did not start, retrying: ${String(error).split("\n").slice(0, 3).join(" ")}`);
    }
  }
}

/**
 * The service on a fresh database, with one account; resolves { url, fullKey, uploadKey, pid, stop, output }:
 * pid is wrangler dev's (workerd runs below it), stop() ends it before the run's cleanup does,
 * output() is the tail of its log (at `logLevel`: "info" lists every request with its status).
 * `script` runs another entry point with the service's bindings (a counting wrapper of it);
 * `inspectorPort` is its devtools port (by default a free one), for a profile.
 */
export async function startService(ctx, { vars = {}, logLevel, script, inspectorPort } = {}) {
  const adminToken = randomBytes(24).toString("hex");
  // Load runs with one key would meet the rate limits; the limits suite switches them on itself.
  const server = await start(ctx, "service", {
    vars: { ADMIN_TOKEN: adminToken, RATE_LIMITS: "off", ...vars },
    logLevel,
    script,
    inspectorPort,
  });
  const account = await createAccount({ origin: server.url, adminToken, name: "bench" });
  return {
    url: server.url,
    fullKey: account.full_key,
    uploadKey: account.upload_key,
    pid: server.pid,
    stop: server.stop,
    output: server.output,
  };
}

/**
 * bench/minimal: a Worker that only streams R2 objects, the baseline for file serving.
 * Resolves { url, pid, stop }, pid and stop as for startService.
 */
export async function startMinimal(ctx) {
  const server = await start(ctx, "minimal", { config: "bench/minimal/wrangler.toml", migrate: false, readyPath: "/" });
  return { url: server.url, pid: server.pid, stop: server.stop };
}

/**
 * The media service (container/src) as a local process; resolves { url, pid, secret, stop }. Its
 * tools are killed before it is stopped: a job's ffmpeg would otherwise outlive a killed service.
 */
export async function startMedia(ctx, { env = {} } = {}) {
  const secret = randomBytes(24).toString("hex");
  const media = await startMediaService({ port: await freePort(), secret, env });
  const stop = async () => {
    for (const pid of childPids(media.pid)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
    await media.stop();
  };
  ctx.defer(stop);
  return { url: media.url, pid: media.pid, secret, stop };
}

/**
 * { ffmpeg, ffprobe } found the way the media service finds them (FFMPEG_PATH/FFPROBE_PATH, the
 * system's, npm's): the service's own code, bundled under bench/.out so npm packages resolve.
 */
export async function mediaTools() {
  const outfile = await bundleForNode({
    entryPoints: [path.join(ROOT, "container/src/config.ts")],
    outfile: path.join(ROOT, "bench/.out/media-config.mjs"),
    packages: "external",
  });
  return (await import(pathToFileURL(outfile).href)).mediaTools();
}

/** Makes a suite's input with ffmpeg, quietly, overwriting the output file (the last argument). */
export async function makeWithFfmpeg(ffmpeg, args) {
  await promisify(execFile)(ffmpeg, ["-nostdin", "-y", "-v", "error", ...args]);
}

/** ffmpeg input from a lavfi source, e.g. `testsrc2=size=640x480`. */
export const lavfi = (source) => ["-f", "lavfi", "-i", source];

/** Whether a command is on the PATH (the reference tools are optional). */
export function onPath(command) {
  return (process.env.PATH ?? "").split(path.delimiter).some((dir) => {
    try {
      return statSync(path.join(dir, command)).isFile();
    } catch {
      return false;
    }
  });
}

/** Direct children of a process (Linux /proc); empty once it has gone. */
export function childPids(pid) {
  const pids = [];
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      try {
        pids.push(...readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").split(" ").filter(Boolean).map(Number));
      } catch {}
    }
  } catch {}
  return [...new Set(pids)];
}

/** { name, rssKiB, hwmKiB } of a live process from /proc/<pid>/status, or null once it has gone. */
export function procMemory(pid) {
  let status;
  try {
    status = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return null;
  }
  const field = (name) => new RegExp(`^${name}:\\s*(.*)$`, "m").exec(status)?.[1];
  const kib = (name) => Number.parseInt(field(name) ?? "", 10);
  const rssKiB = kib("VmRSS");
  // A zombie has no memory left to report.
  if (!Number.isFinite(rssKiB)) return null;
  return { name: field("Name") ?? "?", rssKiB, hwmKiB: kib("VmHWM") };
}

/** Every descendant of `pid` (wrangler dev runs workerd a level below itself). */
export function descendants(pid) {
  const all = [];
  for (let todo = childPids(pid); todo.length; ) {
    const next = todo.pop();
    all.push(next);
    todo.push(...childPids(next));
  }
  return all;
}

/**
 * wrangler dev runs two workerd processes: a proxy that owns the server's port and forwards every
 * request, and the runtime of the Worker, which also simulates R2 and D1 locally. Every upload
 * byte passes through both, so both are measured, apart.
 */
export function workerdPids(server) {
  const pids = { worker: [], proxy: [] };
  const proxyArg = `--socket-addr=entry=${new URL(server.url).host}`;
  for (const pid of descendants(server.pid)) {
    if (procMemory(pid)?.name !== "workerd") continue;
    const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    pids[args.includes(proxyArg) ? "proxy" : "worker"].push(pid);
  }
  if (!pids.worker.length || !pids.proxy.length)
    throw new Error(`expected two workerd under wrangler dev, found ${JSON.stringify(pids)}`);
  return pids;
}

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** { rss (bytes), cpu (seconds, user + system) } of each kind of workerd; a process gone counts 0. */
export function usage(pids) {
  const of = (list) => {
    let rss = 0;
    let cpu = 0;
    for (const pid of list) {
      rss += (procMemory(pid)?.rssKiB ?? 0) * 1024;
      try {
        // utime and stime are fields 14 and 15; the name before them may hold spaces.
        const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
        cpu += (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
      } catch {}
    }
    return { rss, cpu };
  };
  return { worker: of(pids.worker), proxy: of(pids.proxy) };
}

/** Samples RSS every `intervalMs` until stop(), which returns the peaks in bytes. */
export function sampleRss(pids, intervalMs) {
  const peak = { worker: 0, proxy: 0 };
  const sample = () => {
    const now = usage(pids);
    peak.worker = Math.max(peak.worker, now.worker.rss);
    peak.proxy = Math.max(peak.proxy, now.proxy.rss);
  };
  sample();
  // Unref'd, so an upload that throws leaves nothing keeping the run alive.
  const timer = setInterval(sample, intervalMs).unref();
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

/**
 * A multipart/form-data body built once, so a load run sends identical bytes every time
 * instead of paying for encoding on the client. `file` is { field, filename, type, data }.
 */
export function multipartBody(fields, file) {
  const boundary = `----bench${randomBytes(12).toString("hex")}`;
  const parts = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  if (file) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${file.field}"; filename="${file.filename}"\r\n` +
          `Content-Type: ${file.type}\r\n\r\n`,
      ),
      file.data,
      Buffer.from("\r\n"),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** Uploads one file and returns the Upload resource (`data` of the response). */
export async function upload(service, file, fields = {}) {
  const { body, contentType } = multipartBody(fields, file);
  const res = await fetch(`${service.url}/api`, {
    method: "POST",
    headers: { "X-API-Key": service.fullKey, "Content-Type": contentType },
    body,
  });
  const json = await res.json().catch(() => null);
  if (res.status !== 200 || json?.type !== "success")
    throw new Error(`upload failed: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

/**
 * A valid RGB PNG (a Uint8Array) of random noise of about `targetBytes`. Noise does not compress,
 * so the file size follows the pixel count, and every call gives different bytes. A real image
 * (rather than a fixture padded with junk) keeps working whatever checks uploads get later.
 */
export function makePng(targetBytes, width = 64) {
  const rowBytes = 1 + width * 3; // filter byte + pixels
  const height = Math.max(1, Math.round((targetBytes - 70) / rowBytes));
  const raw = randomFillSync(Buffer.alloc(rowBytes * height));
  for (let y = 0; y < height; y++) raw[y * rowBytes] = 0;
  return pngFile(ihdr(width, height, RGB), pngChunk("IDAT", deflateSync(raw, { level: 0 })));
}

/**
 * One autocannon run after a warm-up at the same concurrency. req/s counts 2xx responses only
 * (autocannon's latency histogram does too), so failures cannot inflate the rate.
 */
export async function load({ url, connections, method = "GET", headers, body, duration = DURATION, warmup = WARMUP }) {
  const result = await autocannon({
    url,
    method,
    headers,
    body,
    connections,
    duration,
    ...(warmup > 0 ? { warmup: { connections, duration: warmup } } : {}),
  });
  const statuses = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count]));
  return {
    connections,
    duration: result.duration,
    requests: result.requests.total,
    ok: result["2xx"],
    rps: result["2xx"] / result.duration,
    latencyMs: {
      mean: result.latency.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      max: result.latency.max,
    },
    bytesPerSecond: result.throughput.total / result.duration,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statuses,
  };
}

/** `columns` is [[header, value(row)], ...]; cells are right-aligned so numbers line up. */
export function table(title, columns, rows) {
  const cells = rows.map((row) => columns.map(([, value]) => String(value(row))));
  const headers = columns.map(([header]) => header);
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i].length)));
  const line = (values) => values.map((v, i) => v.padStart(widths[i])).join("  ");
  return `${[title, line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...cells.map(line)].join("\n")}\n`;
}

export const fixed = (digits) => (n) => (Number.isFinite(n) ? n.toFixed(digits) : "-");
export const ratio = (a, b) => (b > 0 ? a / b : NaN);
export const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
export const mib = (bytes) => (Number.isFinite(bytes) ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : "-");

/** The `p`th percentile (0 to 100, nearest rank) of the finite values, NaN if there are none. */
export function percentile(values, p) {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Median of the finite values, NaN if there are none. */
export function median(values) {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (!sorted.length) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * A virtual authenticator in the page's browser (the DevTools protocol's WebAuthn domain) that
 * holds passkeys and says the user is present and verified: the dashboard's sign-in, unattended.
 */
export async function addVirtualAuthenticator(page) {
  const cdp = await page.createCDPSession();
  await cdp.send("WebAuthn.enable");
  await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
}
