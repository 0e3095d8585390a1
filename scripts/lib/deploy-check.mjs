// What Cloudflare would say of a deploy, found without an account or Docker: the bundle `wrangler
// deploy --dry-run` makes (its size against the platform's limit, every Durable Object, Container
// and Workflow class exported), and the Worker's startup time as `wrangler check startup` measures
// it. `npm test` runs it (test/node/deploy-check.test.ts), as does `npm run deploy` before going out.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT, wrangler } from "./server.mjs";

/**
 * A Worker's size after compression on the Workers Paid plan, which Containers need (Workers
 * limits: "up to 10 MB in size after compression on the Workers Paid plan").
 */
export const MAX_GZIP_KIB = 10 * 1024;
/** The longest a Worker's global scope may take to run at startup (Workers limits: 1 second). */
export const MAX_STARTUP_MS = 1000;

// Containers are built only where a Docker daemon runs; the bundle is the same without them.
const NO_CONTAINERS = "--containers-rollout=none";

/** The figures of one line such as "Total Upload: 2549.42 KiB / gzip: 667.84 KiB". */
function sizes(output) {
  const found = /(?:Total Upload|Bundle): ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(output);
  if (!found) throw new Error(`no bundle size in wrangler's output:\n${output}`);
  return { kib: Number(found[1]), gzipKib: Number(found[2]) };
}

/**
 * The Worker's startup time as `wrangler check startup` profiles it: the active time of its global
 * scope's run. The profile samples wall time, so a machine whose cores other work holds inflates it
 * (the same bundle measured 284 ms quiet and 1,212 ms during a full test run); what a bundle costs
 * is its fastest run, so up to three are taken while it is past the limit.
 */
function fastestStartup(config, cwd, scratch) {
  let fastest = Number.POSITIVE_INFINITY;
  for (let run = 0; run < 3 && fastest > MAX_STARTUP_MS; run++) {
    const startup = wrangler(
      [
        "check",
        "startup",
        "--config",
        config,
        `--args=${NO_CONTAINERS}`,
        "--outfile",
        path.join(scratch, "startup.cpuprofile"),
      ],
      { cwd },
    );
    const active = /Active: ([\d.]+) ms/.exec(startup);
    if (!active) throw new Error(`no startup time in wrangler's output:\n${startup}`);
    fastest = Math.min(fastest, Number(active[1]));
  }
  return fastest;
}

/**
 * Checks the Worker of `config` as a deploy would, and returns its figures: { kib, gzipKib,
 * startupMs, bindings } (bindings: each `env.NAME` the dry run lists). Throws wrangler's own
 * message when the dry run refuses (a binding's class not exported, a bad configuration), and
 * when a figure is past its limit.
 */
export function checkDeploy({ config = "wrangler.toml", cwd = ROOT } = {}) {
  const scratch = mkdtempSync(path.join(os.tmpdir(), "deploy-check-"));
  try {
    const dry = wrangler(["deploy", "--dry-run", NO_CONTAINERS, "--config", config, "--outdir", scratch], { cwd });
    const bindings = [...dry.matchAll(/^env\.([A-Z0-9_]+) /gm)].map((m) => m[1]);
    const startupMs = fastestStartup(config, cwd, scratch);
    const figures = { ...sizes(dry), startupMs, bindings };
    if (figures.gzipKib > MAX_GZIP_KIB)
      throw new Error(`the Worker is ${figures.gzipKib} KiB compressed, past the ${MAX_GZIP_KIB} KiB limit`);
    if (figures.startupMs > MAX_STARTUP_MS)
      throw new Error(`the Worker takes ${figures.startupMs} ms to start, past the ${MAX_STARTUP_MS} ms limit`);
    return figures;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
