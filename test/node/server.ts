import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll } from "vitest";
import { createAccount as createServiceAccount } from "../../scripts/lib/accounts.mjs";
import { startMediaService } from "../../scripts/lib/media.mjs";
import { GENEROUS_LIMITS } from "../support/limits";
import { FIXTURES_DIR } from "../support/media";
import { MEDIA_TOOLS_ENV } from "../support/tools";
import { freePort, startServer } from "../../scripts/lib/server.mjs";

export const ADMIN_TOKEN = "node-test-admin-token-0123456789abcdefghij";

export interface TestServer {
  /** Origin of the service, e.g. http://127.0.0.1:43210 */
  url: string;
  /** The API root ({base_url} of the spec). */
  api: string;
  stop(): Promise<void>;
}

/**
 * `wrangler dev` on a free port with a fresh, temporary state directory; `script` runs another
 * entry point than the config's (a test's wrapper of the Worker).
 */
export async function startTestServer(vars: Record<string, string> = {}, script?: string): Promise<TestServer> {
  const stateDir = await mkdtemp(path.join(os.tmpdir(), "media-host-test-"));
  try {
    const server = await startServer({
      port: await freePort(),
      stateDir,
      script,
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
  form.append("uploads", new Blob([bytes]), filename);
  return fetch(server.api, { method: "POST", headers: { "X-API-Key": key }, body: form });
}

export interface MediaTestBed {
  server: TestServer;
  account: TestAccount;
  /** A temporary directory for the test's files, removed by stop(). */
  dir: string;
  stop(): Promise<void>;
}

/** The dev server wired to a real media service process (running npm's ffmpeg), with one account and a scratch dir. */
export async function startWithMediaService(name: string, vars: Record<string, string> = {}): Promise<MediaTestBed> {
  const secret = `${name}-media-secret-0123456789`;
  const dir = await mkdtemp(path.join(os.tmpdir(), `${name}-`));
  const media = await startMediaService({ port: await freePort(), secret, env: MEDIA_TOOLS_ENV });
  const server = await startTestServer({ MEDIA_SERVICE_URL: media.url, MEDIA_SECRET: secret, ...vars }).catch(
    async (error) => {
      await media.stop();
      throw error;
    },
  );
  return {
    server,
    account: await createAccount(server, name),
    dir,
    async stop() {
      await server.stop();
      await media.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * startWithMediaService for the test file that calls it: started before its tests, stopped after
 * them. The bed's fields are set once the tests run, not while the file is being collected.
 */
export function useMediaTestBed(name: string, vars: Record<string, string> = {}): MediaTestBed {
  const bed = {} as MediaTestBed;
  beforeAll(async () => {
    Object.assign(bed, await startWithMediaService(name, vars));
  });
  afterAll(() => bed.stop?.());
  return bed;
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
