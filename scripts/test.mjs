// `npm test`: the type checks and Biome run beside vitest rather than before it. They need about
// ten seconds of one core, which vitest's global setup (media made, servers started) leaves free;
// the run fails if either fails. Arguments go to vitest.
import { spawn } from "node:child_process";
import path from "node:path";

const BIN = path.resolve(import.meta.dirname, "../node_modules/.bin");

/** A tool of the project's own (node_modules/.bin, as npm puts it first on the PATH): its exit code. */
const run = (command, args) =>
  new Promise((resolve) => {
    const child = spawn(path.join(BIN, command), args, { stdio: "inherit" });
    child.on("error", (error) => {
      console.error(`${command}: ${error.message}`);
      resolve(1);
    });
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });

const CHECKS = [
  ["tsc", ["--noEmit"]],
  ["tsc", ["-p", "src/site/browser"]],
  ["tsc", ["-p", "test/node/tsconfig.uppy.json"]],
  ["biome", ["check"]],
];

async function checks() {
  for (const [command, args] of CHECKS) {
    const code = await run(command, args);
    if (code !== 0) return code;
  }
  return 0;
}

const codes = await Promise.all([checks(), run("vitest", ["run", ...process.argv.slice(2)])]);
process.exit(codes.find((code) => code !== 0) ?? 0);
