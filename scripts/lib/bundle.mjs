// One way to turn the project's TypeScript into a Node ES module: the media service for `npm run
// dev` and the tests, and pieces of the Worker or the service that the benchmarks run directly.
import { mkdirSync } from "node:fs";
import path from "node:path";
import { build } from "esbuild";

/** Bundles `entryPoints` (or `stdin`) to `outfile` for Node 24; other esbuild options pass through. */
export async function bundleForNode({ outfile, ...options }) {
  mkdirSync(path.dirname(outfile), { recursive: true });
  await build({
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    logLevel: "warning",
    outfile,
    ...options,
  });
  return outfile;
}
