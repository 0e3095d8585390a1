// Where a small upload's CPU goes inside the Worker: the service under `wrangler dev` (workerd),
// profiled through its devtools port (the Chrome DevTools Protocol's Profiler domain) while
// PROFILE_UPLOADS uploads of a 3 KiB PNG are sent one at a time after a warm-up. Prints the
// functions with the most self time, in ms per upload, with their source file and line (the
// bundle's source map, as wrangler writes it), the same grouped by source file, and charged to
// the nearest function of src/ on each sample's stack (what our code makes libraries do). The
// whole profile is kept in bench/.out/upload.cpuprofile, for Chrome's DevTools.
//   PROFILE_UPLOADS  uploads profiled (default 300)
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { SourceMapConsumer } from "source-map-js";
import { freePort } from "../scripts/lib/server.mjs";
import { fixed, makePng, multipartBody, ROOT, startService, table } from "./lib.mjs";

export const description = "A profile of the Worker's CPU over small uploads, by function and by file";
const UPLOADS = Number(process.env.PROFILE_UPLOADS || 300);
export const settings = `${UPLOADS} uploads of 3 KiB, one at a time`;
const WARMUP_UPLOADS = 30;
/** The sampling interval, µs: fine enough for sub-millisecond functions over a few hundred requests. */
const SAMPLE_US = 50;
/** Samples that are not the Worker's own work. */
const IDLE = new Set(["(idle)", "(program)"]);
/** The profiler's own names for what is not a function of a script. */
const NOT_SCRIPT = new Set(["(root)", "(garbage collector)"]);

/**
 * A devtools session on the Worker's isolate: `send(method, params)` resolves its result;
 * `scripts` holds what Debugger.scriptParsed said of each script (its file and source map).
 */
async function devtools(inspectorPort) {
  let targets = [];
  for (let i = 0; i < 100 && !targets.length; i++) {
    targets = await fetch(`http://127.0.0.1:${inspectorPort}/json`)
      .then((r) => r.json())
      .catch(() => []);
    if (!targets.length) await new Promise((r) => setTimeout(r, 100));
  }
  if (!targets.length) throw new Error(`no devtools target on port ${inspectorPort}`);
  // The dev server's inspector proxy takes only the origins it knows (Node's WebSocket sends none).
  const socket = new WebSocket(targets[0].webSocketDebuggerUrl, { headers: { Origin: "http://127.0.0.1" } });
  await new Promise((resolve, reject) => {
    socket.addEventListener("open", resolve, { once: true });
    socket.addEventListener("error", reject, { once: true });
  });
  const waiting = new Map();
  const scripts = new Map();
  let next = 1;
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data));
    if (message.method === "Debugger.scriptParsed") scripts.set(message.params.scriptId, message.params);
    const pending = waiting.get(message.id);
    if (!pending) return;
    waiting.delete(message.id);
    if (message.error) pending.reject(new Error(`${message.error.message} (${message.error.code})`));
    else pending.resolve(message.result);
  });
  const send = (method, params = {}) =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      socket.send(JSON.stringify({ id, method, params }));
    });
  return { send, scripts, close: () => socket.close() };
}

/** Each node's self time (ms), from the samples and the time before each. */
function selfTimes(profile) {
  const self = new Map();
  profile.samples.forEach((node, i) => {
    self.set(node, (self.get(node) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return self;
}

/** The bundle's file on disk, from what the debugger said of its script (the profile names file:///bundle/index.js). */
const bundleFile = (script) => (script?.url.startsWith("file://") ? new URL(script.url).pathname : null);

/**
 * Where each module of a bundle starts: esbuild heads each with a comment naming its file
 * (`// node_modules/drizzle-orm/entity.js`, `// src/uploads/create.ts`), which names a package
 * better than its source map (whose paths lose the package name), and the map for the lines.
 */
function bundleIndex(script) {
  const file = bundleFile(script);
  if (!file) return null;
  try {
    const starts = [];
    readFileSync(file, "utf8")
      .split("\n")
      .forEach((line, i) => {
        const module = /^\/\/ ((?:node_modules|src|\.\.)\/\S+\.[cm]?[jt]sx?)$/.exec(line)?.[1];
        if (module) starts.push({ line: i, module });
      });
    const map = script.sourceMapURL
      ? JSON.parse(readFileSync(path.join(path.dirname(file), script.sourceMapURL), "utf8"))
      : null;
    return { starts, map: map ? new SourceMapConsumer(map) : null };
  } catch {
    return null;
  }
}

/** The module holding 0-based bundle line `line`: the last that starts at or before it. */
function moduleAt(starts, line) {
  let lo = 0;
  let hi = starts.length - 1;
  let found = null;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid].line <= line) {
      found = starts[mid].module;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** Where a frame is: its module and, for the project's own sources, the line (`src/uploads/create.ts:41`). */
function locate(frame, indexOf) {
  if (!frame.url) return { file: "(runtime)", at: "(runtime)" };
  const index = indexOf(frame.scriptId);
  const module = index && moduleAt(index.starts, frame.lineNumber);
  if (!module) return { file: frame.url, at: `${frame.url}:${frame.lineNumber + 1}` };
  const original = index.map?.originalPositionFor({ line: frame.lineNumber + 1, column: frame.columnNumber });
  const line = module.startsWith("src/") && original?.line ? original.line : null;
  return { file: module, at: line ? `${module}:${line}` : module };
}

/** The top `limit` of `totals` (name -> ms), in ms per upload. */
const top = (totals, limit) =>
  [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([name, ms]) => ({ name, ms: ms / UPLOADS }));

export async function run(ctx, log) {
  const inspectorPort = await freePort();
  const service = await startService(ctx, { inspectorPort });
  const file = { field: "uploads", filename: "small.png", type: "image/png", data: makePng(3 * 1024) };
  const { body, contentType } = multipartBody({ allow_duplicate: "1" }, file);
  const headers = { "X-API-Key": service.fullKey, "Content-Type": contentType };
  const upload = async () => {
    const res = await fetch(`${service.url}/api`, { method: "POST", headers, body });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`POST /api: ${res.status}`);
  };
  for (let i = 0; i < WARMUP_UPLOADS; i++) await upload();

  const session = await devtools(inspectorPort);
  // Only for the scripts' files: the debugger is off again while the profile runs.
  await session.send("Debugger.enable");
  await session.send("Debugger.disable");
  await session.send("Profiler.enable");
  await session.send("Profiler.setSamplingInterval", { interval: SAMPLE_US });
  log(`  profiling ${UPLOADS} uploads`);
  await session.send("Profiler.start");
  const started = performance.now();
  for (let i = 0; i < UPLOADS; i++) await upload();
  const wallMs = performance.now() - started;
  const { profile } = await session.send("Profiler.stop");
  session.close();

  const outDir = path.join(ROOT, "bench/.out");
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, "upload.cpuprofile"), JSON.stringify(profile));

  const indexes = new Map();
  const indexOf = (scriptId) => {
    if (!indexes.has(scriptId)) indexes.set(scriptId, bundleIndex(session.scripts.get(scriptId)));
    return indexes.get(scriptId);
  };
  // The bundle and its map live only as long as the dev server: read them first.
  for (const node of profile.nodes) if (node.callFrame.url) indexOf(node.callFrame.scriptId);
  await service.stop();
  const self = selfTimes(profile);
  const byFunction = new Map();
  const byFile = new Map();
  const byCaller = new Map();
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const where = (node) => {
    const name = node.callFrame.functionName || "(anonymous)";
    return { name, ...(NOT_SCRIPT.has(name) ? { file: name, at: "" } : locate(node.callFrame, indexOf)) };
  };
  /** The nearest function of the project's own (src/) on the node's stack, itself included. */
  const caller = (id) => {
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const frame = where(nodes.get(at));
      if (frame.file.startsWith("src/")) return `${frame.name}  ${frame.at}`;
    }
    return null;
  };
  let busy = 0;
  for (const node of profile.nodes) {
    const ms = self.get(node.id) ?? 0;
    const { name, file, at } = where(node);
    if (!ms || IDLE.has(name)) continue;
    busy += ms;
    const key = at ? `${name}  ${at}` : name;
    byFunction.set(key, (byFunction.get(key) ?? 0) + ms);
    byFile.set(file, (byFile.get(file) ?? 0) + ms);
    const owner = caller(node.id) ?? `(no project function) ${file}`;
    byCaller.set(owner, (byCaller.get(owner) ?? 0) + ms);
  }
  const columns = [
    ["", (r) => r.name],
    ["self ms / upload", (r) => fixed(3)(r.ms)],
  ];
  const results = {
    uploads: UPLOADS,
    wallMsPerUpload: wallMs / UPLOADS,
    busyMsPerUpload: busy / UPLOADS,
    byFunction: top(byFunction, 30),
    byFile: top(byFile, 20),
    byCaller: top(byCaller, 25),
  };
  const report = [
    `${UPLOADS} uploads: ${fixed(2)(results.wallMsPerUpload)} ms each from the client, ` +
      `${fixed(2)(results.busyMsPerUpload)} ms of the isolate's CPU each (idle and the runtime's own "(program)" left out)`,
    table("Self time by function (source file and line from the bundle's source map)", columns, results.byFunction),
    table("Self time by source file", columns, results.byFile),
    table(
      "Self time charged to the nearest project function on its stack (what our code makes libraries and the runtime do)",
      columns,
      results.byCaller,
    ),
    "The whole profile: bench/.out/upload.cpuprofile (Chrome DevTools, Performance > Load profile).",
  ].join("\n\n");
  return { report, results };
}
