// Runs the media service (container/src) as a plain process on the host: there is no Docker
// daemon locally, so the container's Durable Object forwards `npm run dev`'s and the tests' calls
// to this process (src/media/local-container.ts) instead of a container's port.
import { spawn } from "node:child_process";
import { renameSync } from "node:fs";
import path from "node:path";
import { bundleForNode } from "./bundle.mjs";
import { ROOT } from "./server.mjs";

const OUT = path.join(ROOT, ".wrangler", "media-service", "server.mjs");

/**
 * Bundles container/src/main.ts the way the Dockerfile does: packages (sharp with its native
 * libvips, libheif-js with its WebAssembly) stay outside and load from node_modules.
 */
export async function buildMediaService() {
  // Written aside and renamed: a service started meanwhile (a test file beside this one) never
  // reads a bundle being written.
  const temp = `${OUT}.${process.pid}.tmp.mjs`;
  await bundleForNode({ entryPoints: [path.join(ROOT, "container/src/main.ts")], outfile: temp, packages: "external" });
  renameSync(temp, OUT);
  return OUT;
}

/** Starts the service on 127.0.0.1:port and resolves once /health answers. */
export async function startMediaService({ port, secret, env = {}, log = false, timeoutMs = 20_000 }) {
  const entry = await buildMediaService();
  const child = spawn(process.execPath, [entry], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", MEDIA_SECRET: secret, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  /** Settles with the exit code when the process ends, whoever ended it. */
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)));
  let output = "";
  const collect = (chunk) => {
    output = (output + chunk).slice(-20_000);
    if (log) process.stdout.write(`[media] ${chunk}`);
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  const url = `http://127.0.0.1:${port}`;
  const stop = () =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 3000).unref();
    });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`media service exited (${child.exitCode}):\n${output}`);
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {}
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`media service did not answer on ${url}:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, pid: child.pid, process: child, stop, exited, output: () => output };
}
