// A longer fuzz campaign: the fuzz test files (test/worker/fuzz/) in workerd, with more runs per
// property and more damaged copies per corpus file than CI's fixed defaults, on a seed of its
// own. Prints the runs, the seed, the time and each test's outcome; a failure prints the seed and
// path that replay it (with `npx vitest run --project worker test/worker/fuzz/`).
//   FUZZ_RUNS   runs per property, and corpus cases scaled alike (default 500; CI: 60 to 500)
//   FUZZ_SEED   the seed (default: a new one each campaign)
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { fixed, ROOT, table } from "./lib.mjs";

const RUNS = Number(process.env.FUZZ_RUNS || 500);
const SEED = Number(process.env.FUZZ_SEED) || 1 + Math.floor(Math.random() * 0x7ffffffe);
const FILES = "test/worker/fuzz/";

export const description = "Fuzz campaign: the fuzz test files with more runs, on a seed of its own";
export const settings = `FUZZ_RUNS=${RUNS}, FUZZ_SEED=${SEED}`;

export async function run(ctx, log) {
  const outDir = path.join(ROOT, "bench/.out");
  mkdirSync(outDir, { recursive: true });
  const reportFile = path.join(outDir, "fuzz-vitest.json");
  // A campaign that ends before vitest writes its report must not be read as an earlier one's.
  rmSync(reportFile, { force: true });
  const args = [
    "run",
    "--project",
    "worker",
    FILES,
    "--reporter=default",
    "--reporter=json",
    `--outputFile.json=${reportFile}`,
  ];
  log(`  FUZZ_RUNS=${RUNS} FUZZ_SEED=${SEED} vitest ${args.join(" ")}`);
  const started = Date.now();
  // Its own process group, so that an interrupted campaign takes workerd and the media service with it.
  const child = spawn(path.join(ROOT, "node_modules/.bin/vitest"), args, {
    cwd: ROOT,
    env: { ...process.env, FUZZ_RUNS: String(RUNS), FUZZ_SEED: String(SEED) },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  ctx.defer(() => {
    if (child.exitCode === null) process.kill(-child.pid, "SIGKILL");
  });
  // vitest's progress is the campaign's progress: to stderr, as every suite's is.
  child.stdout.pipe(process.stderr);
  child.stderr.pipe(process.stderr);
  const code = await new Promise((resolve) => child.on("exit", resolve));
  const seconds = (Date.now() - started) / 1000;

  const report = JSON.parse(readFileSync(reportFile, "utf8"));
  const rows = report.testResults.flatMap((file) =>
    file.assertionResults.map((test) => ({
      file: path.relative(path.join(ROOT, FILES), file.name),
      test: test.title.length > 70 ? `${test.title.slice(0, 67)}...` : test.title,
      status: test.status,
      seconds: (test.duration ?? 0) / 1000,
    })),
  );
  const failed = rows.filter((r) => r.status !== "passed");
  const replay = `FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS} npx vitest run --project worker ${FILES}`;
  if (code !== 0) process.exitCode = 1;
  const summary = [
    `runs per property: ${RUNS}, seed: ${SEED}, time: ${fixed(0)(seconds)} s, tests: ${rows.length}, failed: ${failed.length}${code !== 0 && !failed.length ? ` (vitest exited with ${code})` : ""}`,
    `replay: ${replay}`,
  ].join("\n");
  const tests = table(
    "Fuzz tests",
    [
      ["file", (r) => r.file],
      ["test", (r) => r.test],
      ["status", (r) => r.status],
      ["s", (r) => fixed(1)(r.seconds)],
    ],
    rows,
  );
  return {
    report: `${summary}\n\n${tests}`,
    results: { runs: RUNS, seed: SEED, seconds, exitCode: code, replay, tests: rows },
  };
}
