// Starts the Worker locally with `wrangler dev` (embedded D1/R2/Durable Objects under stateDir)
// and stops it again. Used by `npm run dev`, the end-to-end tests and the benchmarks.
import { execFile, spawn, spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const require = createRequire(import.meta.url);
const WRANGLER = path.join(path.dirname(require.resolve("wrangler/package.json")), "bin", "wrangler.js");

const quietEnv = () => ({
  ...process.env,
  // V8's compiled code of wrangler's 15 MB bundle, kept on disk by Node and reused while the file
  // and Node are unchanged: each wrangler process after the first compiles about 0.5 s less.
  NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? path.join(ROOT, "node_modules", ".cache", "node-compile"),
  WRANGLER_SEND_METRICS: "false",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  // wrangler dev is interactive on a TTY; these keep it a plain background process.
  CI: "true",
  NO_COLOR: "1",
});

/** Runs wrangler and answers { status, stdout, stderr }, whatever its exit status. */
export function runWrangler(args, { cwd = ROOT, stdio = "pipe" } = {}) {
  const result = spawnSync(process.execPath, [WRANGLER, ...args], { cwd, env: quietEnv(), stdio, encoding: "utf8" });
  return { status: result.status ?? 1, stdout: result.stdout ?? "", stderr: result.stderr ?? "" };
}

export function wrangler(args, options = {}) {
  const result = runWrangler(args, options);
  if (result.status !== 0) {
    throw new Error(
      `wrangler ${args.join(" ")} failed (${result.status}):\n${result.stdout ?? ""}${result.stderr ?? ""}`,
    );
  }
  return result.stdout;
}

const migrationArgs = (stateDir, config) => [
  "d1",
  "migrations",
  "apply",
  "DB",
  "--local",
  "--persist-to",
  stateDir,
  "--config",
  config,
];

export function applyMigrations({ stateDir, config = "wrangler.toml", cwd = ROOT }) {
  wrangler(migrationArgs(stateDir, config), { cwd });
}

/**
 * The statements `wrangler d1 migrations apply` runs on a new database: its table of applied
 * migrations, created as wrangler words it, then each file of migrations/ (wrangler.toml's
 * migrations_dir) in name order, followed by its row in that table.
 */
function migrationStatements(cwd) {
  const dir = path.join(cwd, "migrations");
  const names = readdirSync(dir)
    .filter((name) => name.endsWith(".sql"))
    .sort();
  const table = `CREATE TABLE IF NOT EXISTS "d1_migrations"(
\t\tid         INTEGER PRIMARY KEY AUTOINCREMENT,
\t\tname       TEXT UNIQUE,
\t\tapplied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
);`;
  const files = names.map(
    (name) =>
      `${readFileSync(path.join(dir, name), "utf8")}\nINSERT INTO "d1_migrations" (name)\nvalues ('${name.replace(/'/g, "''")}');`,
  );
  return [table, ...files].join("\n");
}

/**
 * A new state's database migrated in one `wrangler d1 execute` of the statements that
 * `migrations apply` would run (migrationStatements), for the tests' migrated state made once a
 * run. apply starts a local runtime for each file: with 26 files, 13 s and 15 s of CPU, where one
 * execute of the same statements takes 2 s. test/node/dev-script.test.ts checks that the two make
 * the same schema and the same table of applied migrations; `npm run dev` keeps apply.
 */
export async function applyMigrationsAtOnce({ stateDir, config = "wrangler.toml", cwd = ROOT }) {
  const file = path.join(stateDir, "migrations.sql");
  writeFileSync(file, migrationStatements(cwd));
  const args = [WRANGLER, "d1", "execute", "DB", "--local", "--persist-to", stateDir, "--config", config];
  try {
    await new Promise((resolve, reject) => {
      execFile(
        process.execPath,
        [...args, "--file", file, "--yes"],
        { cwd, env: quietEnv(), maxBuffer: 16 * 1024 * 1024 },
        (error, stdout, stderr) => {
          if (error) reject(new Error(`wrangler ${args.slice(1).join(" ")} failed:\n${stdout}${stderr}`));
          else resolve();
        },
      );
    });
  } finally {
    rmSync(file, { force: true });
  }
}

/**
 * The lowest port the kernel hands out to listen(0) and connect(): Miniflare's loopback servers,
 * workerd's sockets, browsers. Linux says where its range starts; elsewhere 32768 is below it.
 */
function ephemeralLow() {
  try {
    return Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}

/** Where each port handed out is claimed, by a file holding its process's pid (git ignores it). */
export const PORT_CLAIMS = path.join(ROOT, "node_modules", ".cache", "ports");

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
};

/**
 * Claims `port` for this process, across the processes of a test run (vitest's workers and its
 * main process each pick ports): a claim is a file created only if absent, and a claim whose
 * process has ended is taken over. A claim being written, with no pid yet, counts as held.
 */
export function claim(port) {
  mkdirSync(PORT_CLAIMS, { recursive: true });
  const file = path.join(PORT_CLAIMS, String(port));
  for (let tries = 0; tries < 2; tries++) {
    try {
      writeFileSync(file, String(process.pid), { flag: "wx" });
      return true;
    } catch (error) {
      if (error.code !== "EEXIST") throw error;
    }
    let holder;
    try {
      holder = Number(readFileSync(file, "utf8"));
    } catch {
      continue; // released between the two calls: try again
    }
    if (!holder || holder === process.pid || alive(holder)) return false;
    rmSync(file, { force: true });
  }
  return false;
}

/**
 * A free port for a server this process starts, chosen at random below the kernel's ephemeral
 * range, and claimed so that no other process of the run picks it in the seconds before the
 * server binds it. A port the kernel chose (listen(0)) would be free only until the kernel gave
 * it to someone else's listen(0), such as the loopback server of another test's workerd; then the
 * server under test answers as someone else's.
 */
export async function freePort() {
  const high = ephemeralLow() - 1;
  const low = Math.max(1024, high - 12_000);
  for (let tries = 0; tries < 200; tries++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (claim(port) && (await canListen(port))) return port;
  }
  throw new Error(`no free port found between ${low} and ${high}`);
}

function canListen(port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

export async function portInUse(port) {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/**
 * Starts `wrangler dev` in its own process group (so stopping it also ends workerd) and resolves
 * once the service answers. `vars` override wrangler.toml vars (and .dev.vars secrets); they go
 * on wrangler's command line, which `ps` shows to every user, so a real secret goes in .dev.vars.
 * `inspectorPort` is the devtools port; by default a free one, so that a server started by a test
 * or a benchmark never collides with another `wrangler dev` (whose default is 9229). `script`
 * runs another entry point (a test's wrapper of the Worker) with the config's bindings. `env` adds
 * to wrangler's environment (the tests' servers turn off its local dashboards with it).
 */
export async function startServer({
  port,
  inspectorPort,
  stateDir,
  config = "wrangler.toml",
  script,
  cwd = ROOT,
  vars = {},
  env = {},
  migrate = true,
  log = false,
  logLevel = log ? "info" : "warn",
  readyPath = "/api/openapi.json",
  timeoutMs = 60_000,
}) {
  if (await portInUse(port)) throw new Error(`port ${port} is already in use on 127.0.0.1`);
  if (migrate) applyMigrations({ stateDir, config, cwd });
  inspectorPort ??= await freePort();
  const args = [
    WRANGLER,
    "dev",
    ...(script ? [script] : []),
    "--config",
    config,
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--persist-to",
    stateDir,
    "--inspector-ip",
    "127.0.0.1",
    "--inspector-port",
    String(inspectorPort),
    "--show-interactive-dev-session=false",
    "--log-level",
    logLevel,
  ];
  for (const [k, v] of Object.entries(vars)) args.push("--var", `${k}:${v}`);
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...quietEnv(), ...env },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const collect = (chunk) => {
    output = (output + chunk).slice(-20_000);
    if (log) process.stdout.write(chunk);
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);

  const url = `http://127.0.0.1:${port}`;
  /** Settles with the exit code when wrangler ends, whoever ended it. */
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)));
  const stop = () => {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {}
    return new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {}
        resolve();
      }, 5000);
      child.once("exit", () => {
        clearTimeout(timer);
        resolve();
      });
    });
  };

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited (${child.exitCode}):\n${output}`);
    try {
      // Only the Worker's own answer: anything else on the port is someone else's server.
      const res = await fetch(url + readyPath);
      if (res.ok) break;
    } catch {}
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`wrangler dev did not answer on ${url} within ${timeoutMs} ms:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { url, pid: child.pid, stop, exited, output: () => output };
}
