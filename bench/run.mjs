// `npm run bench [-- SUITE...]`: runs the named benchmark suites (default: all) against local
// servers, prints plain-text tables to stdout (progress goes to stderr) and writes the raw
// numbers to bench/.out/results.json.
//
// A suite is a module exporting `description` and `run(ctx, log)`, which resolves
// { report, results }, and optionally `settings`, shown in its heading instead of the load-run
// durations (for suites that do not use them). It starts what it needs through bench/lib.mjs,
// which registers every server and temp dir with ctx so they are removed here, whatever happens.
//   BENCH_DURATION / BENCH_WARMUP  seconds per measured run / warm-up (default 5 / 1)
//   BENCH_CONVERSION_RUNS          runs of each conversion measurement (default 2)
//   BENCH_VIDEO_RUNS / BENCH_VIDEO_LARGE  runs of each ladder measurement, and the 200 MB AVI too (bench/video.mjs)
//   FUZZ_RUNS / FUZZ_SEED          runs per property and the seed of the fuzz campaign (bench/fuzz.mjs)
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createContext, DURATION, ROOT, WARMUP } from "./lib.mjs";

const SUITES = {
  http: () => import("./http-throughput.mjs"),
  conversion: () => import("./conversion.mjs"),
  images: () => import("./images.mjs"),
  variants: () => import("./variants.mjs"),
  large: () => import("./large.mjs"),
  tus: () => import("./tus.mjs"),
  limits: () => import("./limits.mjs"),
  hostile: () => import("./hostile.mjs"),
  scale: () => import("./scale.mjs"),
  profile: () => import("./profile.mjs"),
  listings: () => import("./listings.mjs"),
  soak: () => import("./soak.mjs"),
  fuzz: () => import("./fuzz.mjs"),
  webhooks: () => import("./webhooks.mjs"),
  video: () => import("./video.mjs"),
  pages: () => import("./pages.mjs"),
};

const requested = process.argv.slice(2);
const unknown = requested.filter((name) => !(name in SUITES));
if (unknown.length) {
  console.error(`Unknown suite: ${unknown.join(", ")}. Available: ${Object.keys(SUITES).join(", ")}.`);
  process.exit(2);
}
const names = requested.length ? requested : Object.keys(SUITES);

// A baseline on a different runtime version would not measure the service's own overhead.
const compatDate = (file) =>
  /^compatibility_date\s*=\s*"([^"]+)"/m.exec(readFileSync(path.join(ROOT, file), "utf8"))?.[1];
if (compatDate("wrangler.toml") !== compatDate("bench/minimal/wrangler.toml")) {
  console.error("bench/minimal/wrangler.toml must have the same compatibility_date as wrangler.toml.");
  process.exit(2);
}

const ctx = createContext();
// Servers run in their own process groups, so they would outlive an interrupted run.
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, async () => {
    console.error(`\n${signal}: stopping servers...`);
    await ctx.cleanup();
    process.exit(130);
  });
}

const log = (line) => console.error(line);
const output = {
  date: new Date().toISOString(),
  node: process.version,
  cpus: `${os.cpus().length} x ${os.cpus()[0]?.model ?? "unknown"}`,
  durationSeconds: DURATION,
  warmupSeconds: WARMUP,
  suites: {},
};
try {
  for (const name of names) {
    const suite = await SUITES[name]();
    log(`[${name}] ${suite.description}`);
    const { report, results } = await suite.run(ctx, log);
    output.suites[name] = results;
    // Idle servers of one suite would still take memory and CPU from the next one.
    await ctx.cleanup();
    const settings = suite.settings ?? `${DURATION} s per run after ${WARMUP} s warm-up`;
    console.log(`== ${name}: ${suite.description} (${settings}) ==\n`);
    console.log(report);
  }
  const outDir = path.join(ROOT, "bench/.out");
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, "results.json"), `${JSON.stringify(output, null, 2)}\n`);
  log(`Raw numbers: ${path.relative(process.cwd(), path.join(outDir, "results.json"))}`);
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await ctx.cleanup();
}
