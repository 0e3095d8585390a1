import { existsSync } from "node:fs";
import { cp, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, inject } from "vitest";
import { createAccount as createServiceAccount } from "../../scripts/lib/accounts.mjs";
import { startMediaService } from "../../scripts/lib/media.mjs";
import { GENEROUS_LIMITS } from "../support/limits";
import { FIXTURES_DIR } from "../support/media";
import { MEDIA_TOOLS_ENV } from "../support/tools";
import { applyMigrationsAtOnce, freePort, portInUse, startServer } from "../../scripts/lib/server.mjs";

export const ADMIN_TOKEN = "node-test-admin-token-0123456789abcdefghij";

export interface TestServer {
  /** Origin of the service, e.g. http://127.0.0.1:43210 */
  url: string;
  /** The API root ({base_url} of the spec). */
  api: string;
  stop(): Promise<void>;
}

/**
 * What wrangler dev adds for a person at a browser, off in the tests' servers: the local explorer
 * (a dashboard of the bindings, which wraps each SQLite Durable Object class) and local
 * observability (every invocation of the Worker and its Workflows streamed to a collector Worker
 * that stores it for that dashboard). No test reads either, and the Worker's code runs the same
 * without them; with both off a start took about 1 s less CPU, and 40 uploads and listings a third
 * less (the tail's work). `npm run dev` keeps them.
 */
const DEV_DASHBOARDS_OFF = { X_LOCAL_EXPLORER: "false", X_LOCAL_OBSERVABILITY: "false" };

/** Written into the migrated state directory once it is complete. */
const MIGRATED = "migrated";

/**
 * A state directory with the D1 migrations applied, made once for a run (test/node/global-setup.ts)
 * and copied for each server: a wrangler process of its own, about 2 s of CPU (applyMigrationsAtOnce).
 */
export async function makeMigratedState(): Promise<{ dir: string; ready: Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "media-host-migrated-"));
  const ready = applyMigrationsAtOnce({ stateDir: dir }).then(() => writeFile(path.join(dir, MIGRATED), ""));
  return { dir, ready };
}

/** The run's migrated state (or `template`) once it is complete; null when there is none. */
export async function migratedState(template = inject("migratedState")): Promise<string | null> {
  if (!template) return null;
  for (const deadline = Date.now() + 60_000; !existsSync(path.join(template, MIGRATED)); ) {
    if (Date.now() > deadline) return null;
    await new Promise((r) => setTimeout(r, 100));
  }
  return template;
}

/** Copies the run's migrated state (once it is complete) into stateDir; false when there is none. */
async function copyMigratedState(stateDir: string, template?: string): Promise<boolean> {
  const ready = await migratedState(template);
  if (!ready) return false;
  await cp(ready, stateDir, { recursive: true });
  return true;
}

/**
 * `wrangler dev` on a free port (or `port`) with a fresh, temporary state directory; `script` runs
 * another entry point than the config's (a test's wrapper of the Worker). The state starts as the
 * run's migrated one (`template`, by default the global setup's) or is migrated here.
 */
export async function startTestServer(
  vars: Record<string, string> = {},
  script?: string,
  port?: number,
  template?: string,
): Promise<TestServer> {
  const stateDir = await mkdtemp(path.join(os.tmpdir(), "media-host-test-"));
  try {
    const migrated = await copyMigratedState(stateDir, template);
    const server = await startServer({
      port: port ?? (await freePort()),
      stateDir,
      migrate: !migrated,
      script,
      env: DEV_DASHBOARDS_OFF,
      vars: { ADMIN_TOKEN, LINK_SIGNING_SECRET: "node-test-link-signing-secret", ...GENEROUS_LIMITS, ...vars },
    });
    return {
      url: server.url,
      api: `${server.url}/api`,
      async stop() {
        await server.stop();
        await rm(stateDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(stateDir, { recursive: true, force: true });
    throw error;
  }
}

export interface RestartableServer extends TestServer {
  /** Where wrangler dev keeps its local D1, R2 and Durable Objects. */
  stateDir: string;
  /** Ends wrangler dev and its workerd at once, as a crash would: the state directory stays. */
  kill(): void;
  /** wrangler dev again, on the same port and state; resolves once it answers. */
  restart(): Promise<void>;
}

/**
 * A dev server wired to a media service of its own (running npm's ffmpeg), for a test that
 * kills the Worker: it starts again on the same port and state, where its clients left it.
 */
export async function startRestartableServer(name: string): Promise<RestartableServer> {
  const secret = `${name}-media-secret-0123456789`;
  const media = await startMediaService({ port: await freePort(), secret, env: MEDIA_TOOLS_ENV });
  const stateDir = await mkdtemp(path.join(os.tmpdir(), `${name}-state-`));
  const stopAll = async () => {
    await media.stop();
    await rm(stateDir, { recursive: true, force: true });
  };
  try {
    const migrated = await copyMigratedState(stateDir);
    const options = {
      port: await freePort(),
      stateDir,
      env: DEV_DASHBOARDS_OFF,
      vars: {
        ADMIN_TOKEN,
        LINK_SIGNING_SECRET: "node-test-link-signing-secret",
        ...GENEROUS_LIMITS,
        MEDIA_SERVICE_URL: media.url,
        MEDIA_SECRET: secret,
      },
    };
    let server = await startServer({ ...options, migrate: !migrated });
    return {
      url: server.url,
      api: `${server.url}/api`,
      stateDir,
      kill() {
        try {
          process.kill(-server.pid, "SIGKILL");
        } catch {}
      },
      async restart() {
        await server.exited;
        // workerd, below wrangler, lets go of the port as it dies.
        for (const deadline = Date.now() + 10_000; await portInUse(options.port); ) {
          if (Date.now() > deadline) throw new Error(`port ${options.port} is still taken after the kill`);
          await new Promise((r) => setTimeout(r, 100));
        }
        server = await startServer({ ...options, migrate: false });
      },
      async stop() {
        await server.stop();
        await stopAll();
      },
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

export interface TestAccount {
  id: string;
  full: string;
  upload: string;
}

export async function createAccount(server: TestServer, name: string): Promise<TestAccount> {
  const account = await createServiceAccount({ origin: server.url, adminToken: ADMIN_TOKEN, name });
  return { id: account.id, full: account.full_key, upload: account.upload_key };
}

export const fixturePath = (relativePath: string) => path.join(FIXTURES_DIR, relativePath);

export async function fixture(relativePath: string): Promise<Uint8Array> {
  return new Uint8Array(await readFile(fixturePath(relativePath)));
}

/** POST {base_url} with one file, as a browser form would send it. */
export function uploadFile(
  server: TestServer,
  key: string,
  bytes: Uint8Array,
  filename: string,
  fields: Record<string, string> = {},
): Promise<Response> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  // The DOM's types (tus-uppy.test.ts is checked with them) take only an ArrayBuffer's view.
  form.append("uploads", new Blob([bytes as Uint8Array<ArrayBuffer>]), filename);
  return fetch(server.api, { method: "POST", headers: { "X-API-Key": key }, body: form });
}

export interface MediaTestBed {
  server: TestServer;
  account: TestAccount;
  /** A temporary directory for the test's files, removed by stop(). */
  dir: string;
  stop(): Promise<void>;
}

/** The dev server and a real media service process (running npm's ffmpeg) wired to it. */
async function startServerWithMedia(name: string, vars: Record<string, string> = {}, port?: number, template?: string) {
  const secret = `${name}-media-secret-0123456789`;
  const media = await startMediaService({ port: await freePort(), secret, env: MEDIA_TOOLS_ENV });
  const wired = { MEDIA_SERVICE_URL: media.url, MEDIA_SECRET: secret, ...vars };
  const server = await startTestServer(wired, undefined, port, template).catch(async (error) => {
    await media.stop();
    throw error;
  });
  return {
    server,
    async stop() {
      await server.stop();
      await media.stop();
    },
  };
}

/** The dev server wired to a real media service process (running npm's ffmpeg), with one account and a scratch dir. */
export async function startWithMediaService(name: string, vars: Record<string, string> = {}): Promise<MediaTestBed> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `${name}-`));
  const started = await startServerWithMedia(name, vars);
  return {
    server: started.server,
    account: await createAccount(started.server, name),
    dir,
    async stop() {
      await started.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The servers the Node test files share (test/node/global-setup.ts): a plain dev server, and a
 * dev server with a media service. They start in the background while the first files run; a
 * file that needs one waits until it answers (sharedTestServer, useMediaTestBed).
 */
export async function startSharedServers(template: string) {
  // Each server's origin, or why it did not start, is written here once known: a port taken
  // before its server binds it could be handed to another test's server meanwhile.
  const dir = await mkdtemp(path.join(os.tmpdir(), "media-host-shared-"));
  const started = {
    // Link uploads from a test's own loopback server (MCP's upload_from_url, the compatible endpoints).
    plain: startTestServer({ UNSAFE_ALLOW_LOOPBACK_LINKS: "true" }, undefined, undefined, template),
    media: startServerWithMedia("shared", {}, undefined, template),
  };
  const origins = { plain: started.plain.then((s) => s.url), media: started.media.then((s) => s.server.url) };
  // Written aside and renamed, so that a reader never sees half of it.
  const publish = async (name: string, value: { url?: string; error?: string }) => {
    await writeFile(path.join(dir, `${name}.part`), JSON.stringify(value));
    await rename(path.join(dir, `${name}.part`), path.join(dir, `${name}.json`));
  };
  for (const [name, origin] of Object.entries(origins)) {
    origin.then(
      (url) => publish(name, { url }),
      (error) => publish(name, { error: String(error) }),
    );
  }
  const stopped = (server: Promise<{ stop(): Promise<void> }>) =>
    server.then(
      (s) => s.stop(),
      () => {},
    );
  return {
    dir,
    stop: async () => {
      await Promise.all(Object.values(started).map(stopped));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A shared server (test/node/global-setup.ts) once it answers, as a TestServer its users do not stop. */
async function sharedServer(name: "plain" | "media"): Promise<TestServer> {
  const file = path.join(inject("sharedServers"), `${name}.json`);
  for (const deadline = Date.now() + 110_000; !existsSync(file); await new Promise((r) => setTimeout(r, 200))) {
    if (Date.now() > deadline) throw new Error(`the shared ${name} test server did not start in time`);
  }
  const { url, error } = JSON.parse(await readFile(file, "utf8")) as { url?: string; error?: string };
  if (!url) throw new Error(`the shared ${name} test server did not start: ${error}`);
  return { url, api: `${url}/api`, stop: async () => {} };
}

/**
 * The plain dev server that Node test files share (default vars but links to loopback allowed,
 * rate limits off): for files whose tests each use an account of their own and need no server of
 * their own.
 */
export function sharedTestServer(): Promise<TestServer> {
  return sharedServer("plain");
}

/**
 * A dev server with a media service, for the test file that calls it, with an account and a
 * scratch dir of its own: the shared one when `vars` is empty, else one started before its
 * tests and stopped after them. The bed's fields are set once the tests run, not while the file
 * is being collected.
 */
export function useMediaTestBed(name: string, vars: Record<string, string> = {}): MediaTestBed {
  const bed = {} as MediaTestBed;
  beforeAll(async () => {
    if (Object.keys(vars).length > 0) return void Object.assign(bed, await startWithMediaService(name, vars));
    const server = await sharedServer("media");
    const dir = await mkdtemp(path.join(os.tmpdir(), `${name}-`));
    Object.assign(bed, {
      server,
      account: await createAccount(server, name),
      dir,
      stop: () => rm(dir, { recursive: true, force: true }),
    });
  });
  afterAll(() => bed.stop?.());
  return bed;
}

declare module "vitest" {
  export interface ProvidedContext {
    /** Where the shared servers' origins are written (startSharedServers). */
    sharedServers: string;
    /** The run's state directory with the migrations applied (makeMigratedState). */
    migratedState: string;
    /** Whether the usual devtools port, 9229, was held as the shared servers started. */
    devtoolsPortHeld: boolean;
  }
}

/** GET {base_url}/{id} until the upload's media job has made its thumbnail. */
export async function processedUpload<T extends { thumb: string | null }>(
  server: TestServer,
  key: string,
  id: string,
): Promise<T> {
  for (let i = 0; i < 240; i++) {
    const res = await fetch(`${server.api}/${id}`, { headers: { "X-API-Key": key } });
    const { data } = (await res.json()) as { data: T };
    if (data.thumb) return data;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`upload ${id} was not processed`);
}

/**
 * A sized copy (a variant or a transform) from a shared server, fetched again while the server says
 * 503 with Retry-After, as a reader would: the shared media service's share for variants is bounded
 * (src/uploads/variants/make.ts), and other files' tests may hold it for a few seconds.
 */
export async function fetchCopy(url: string, init?: RequestInit): Promise<Response> {
  for (let tries = 1; ; tries++) {
    const res = await fetch(url, init);
    const retryAfter = res.headers.get("Retry-After");
    if (res.status !== 503 || retryAfter === null || tries >= 6) return res;
    await res.arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, Math.min(Number(retryAfter), 10) * 1000));
  }
}
