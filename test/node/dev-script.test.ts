import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { portSetting, startDevServer } from "../../scripts/lib/dev-server.mjs";
import { freePort, portInUse, ROOT, type RunningServer } from "../../scripts/lib/server.mjs";
import { migratedState } from "./server";

/** `npm run dev` itself (scripts/dev.mjs): the scheduled job runs, and the parts stop together. */
let dev: ChildProcess | undefined;
let stateDir: string | undefined;

/** Servers this file holds a port with, as another program would. */
const holders: net.Server[] = [];

afterAll(async () => {
  if (dev && dev.exitCode === null) dev.kill("SIGTERM");
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
  await Promise.all(holders.map((holder) => new Promise((resolve) => holder.close(resolve))));
});

/** Holds `port` on 127.0.0.1 (unless something already does) until the file ends. */
async function hold(port: number) {
  if (await portInUse(port)) return;
  const holder = net.createServer();
  await new Promise<void>((resolve, reject) => holder.once("error", reject).listen(port, "127.0.0.1", resolve));
  holders.push(holder);
}

const children = (pid: number) =>
  readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").split(" ").filter(Boolean).map(Number),
  );
const descendants = (pid: number): number[] => children(pid).flatMap((child) => [child, ...descendants(child)]);
const commandLine = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
/** A local state's D1 schema and its table of applied migrations, read from its SQLite file. */
function migratedShape(stateDir: string) {
  const dir = path.join(stateDir, "v3", "d1", "miniflare-D1DatabaseObject");
  const file = readdirSync(dir).find((name) => name.endsWith(".sqlite") && name !== "metadata.sqlite")!;
  const db = new DatabaseSync(path.join(dir, file), { readOnly: true });
  try {
    return {
      schema: db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").all(),
      applied: db.prepare("SELECT id, name FROM d1_migrations ORDER BY id").all(),
    };
  } finally {
    db.close();
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

it("runs the scheduled job, and stops the media service and exits when wrangler ends on its own", async () => {
  stateDir = await mkdtemp(path.join(os.tmpdir(), "dev-script-"));
  // Another service holds the usual ports, 8787 and 9229: with PORT and INSPECTOR_PORT unset, dev
  // takes free ones instead.
  await hold(8787);
  await hold(9229);
  const { PORT: _port, INSPECTOR_PORT: _inspector, ...env } = process.env;
  dev = spawn(process.execPath, ["scripts/dev.mjs"], {
    cwd: ROOT,
    env: { ...env, STATE_DIR: stateDir, DEV_CRON_SECONDS: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  dev.stdout!.on("data", (chunk) => (output += chunk));
  dev.stderr!.on("data", (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => dev!.once("exit", (code) => resolve(code)));
  const until = async (what: string, check: () => boolean, ms = 90_000) => {
    for (const deadline = Date.now() + ms; !check(); await new Promise((r) => setTimeout(r, 200))) {
      if (Date.now() > deadline || dev!.exitCode !== null) throw new Error(`${what} did not happen:\n${output}`);
    }
  };

  await until("the service starting", () => output.includes("Service ready"));
  const url = /Service ready on (http:\/\/127\.0\.0\.1:(\d+))/.exec(output)!;
  expect(Number(url[2])).not.toBe(8787);
  expect((await fetch(`${url[1]}/api/openapi.json`)).status).toBe(200);
  // wrangler's `migrations apply`, which dev runs, made what the tests' servers start from
  // (applyMigrationsAtOnce): the same schema, the same migrations recorded as applied.
  const template = await migratedState();
  expect(template).not.toBeNull();
  const shape = migratedShape(stateDir);
  expect(shape.applied.length).toBe(
    readdirSync(path.join(ROOT, "migrations")).filter((n) => n.endsWith(".sql")).length,
  );
  expect(shape).toEqual(migratedShape(template!));
  // The secrets reach wrangler by .dev.vars (and the media service by its environment), never by a
  // command line, which every user of the machine can read (ps, /proc/*/cmdline).
  const devVars = readFileSync(path.join(ROOT, ".dev.vars"), "utf8");
  const secrets = ["MEDIA_SECRET", "LINK_SIGNING_SECRET", "ADMIN_TOKEN"].map((name) =>
    new RegExp(`^${name}=(.+)$`, "m").exec(devVars)![1]!.trim(),
  );
  const lines = descendants(dev.pid!).map(commandLine);
  expect(lines.some((line) => line.includes("workerd"))).toBe(true);
  for (const line of lines) for (const secret of secrets) expect(line).not.toContain(secret);
  expect(statSync(path.join(ROOT, ".dev.vars")).mode & 0o077, ".dev.vars is readable by its owner alone").toBe(0);
  await until("the scheduled job running", () => output.includes("[cron] the scheduled job ran"));

  const [wrangler, media] = ["wrangler.js dev", "media-service/server.mjs"].map((name) =>
    children(dev!.pid!).find((pid) => commandLine(pid).includes(name)),
  );
  expect(wrangler && media).toBeTruthy();
  process.kill(-wrangler!, "SIGKILL"); // wrangler dev and its workerd, as a crash would end them
  expect(await exited).not.toBe(0);
  expect(output).toContain("wrangler dev exited on its own");
  expect(alive(media!)).toBe(false);
});

describe("the ports of npm run dev", () => {
  let server: RunningServer | undefined;
  let portsState: string | undefined;
  afterAll(async () => {
    await server?.stop();
    if (portsState) await rm(portsState, { recursive: true, force: true });
  });

  it("starts on other ports when the devtools port is taken between its check and wrangler's bind", async () => {
    portsState = await mkdtemp(path.join(os.tmpdir(), "dev-ports-"));
    const taken: number[] = [];
    const logs: string[] = [];
    // The first devtools port chosen is free when checked, then held by someone else before
    // wrangler binds it, as by another wrangler dev starting at the same moment.
    const pick = async (usual: number, attempt: number) => {
      const port = await freePort();
      if (usual === 9229 && attempt === 1) {
        await hold(port);
        taken.push(port);
      }
      return port;
    };
    server = await startDevServer({ stateDir: portsState, migrate: false, pick, onRetry: (line) => logs.push(line) });
    expect((await fetch(`${server.url}/api/openapi.json`)).status).toBe(200);
    expect(taken).toHaveLength(1);
    expect(logs.join("\n")).toContain(`devtools port ${taken[0]} (INSPECTOR_PORT) was taken as wrangler started`);
  });

  it("names PORT or INSPECTOR_PORT, not wrangler's --port, when it cannot start on the ports", async () => {
    const port = await freePort();
    await hold(port);
    const stateDir = os.tmpdir(); // never used: each start below ends before wrangler runs
    for (const name of ["PORT", "INSPECTOR_PORT"] as const) {
      const setting = name === "PORT" ? { port } : { inspectorPort: port };
      await expect(startDevServer({ ...setting, stateDir, migrate: false })).rejects.toThrow(
        new RegExp(`^Port ${port} \\(${name}\\) is already in use[^]*${name}=<port> npm run dev`),
      );
    }
    expect(() => portSetting({ PORT: "80a" }, "PORT")).toThrow(/^PORT=80a is not a port/);
    // Every attempt losing its port to someone else: wrangler's own words name a flag npm run dev
    // does not take (as wrangler 4.164 said it in the race above).
    const wrangler = new Error(
      'wrangler dev exited (1):\n✘ [ERROR] Address already in use (socket "direct:1:default"). Please check that you ' +
        "are not already running a server on this address or specify a different port with --port.",
    );
    const start = () => Promise.reject(wrangler);
    const failure = startDevServer({ stateDir, migrate: false, start, pick: async () => freePort() });
    await expect(failure).rejects.toThrow(
      /\(PORT\) or devtools port \d+ \(INSPECTOR_PORT\) taken as it started \(3 times\)/,
    );
    await expect(failure).rejects.not.toThrow(/--port/);
  });
});
