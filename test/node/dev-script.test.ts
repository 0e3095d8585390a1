import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { freePort, ROOT } from "../../scripts/lib/server.mjs";

/** `npm run dev` itself (scripts/dev.mjs): the scheduled job runs, and the parts stop together. */
let dev: ChildProcess | undefined;
let stateDir: string | undefined;

afterAll(async () => {
  if (dev && dev.exitCode === null) dev.kill("SIGTERM");
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

const children = (pid: number) =>
  readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").split(" ").filter(Boolean).map(Number),
  );
const descendants = (pid: number): number[] => children(pid).flatMap((child) => [child, ...descendants(child)]);
const commandLine = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
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
  dev = spawn(process.execPath, ["scripts/dev.mjs"], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(await freePort()), STATE_DIR: stateDir, DEV_CRON_SECONDS: "1" },
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
