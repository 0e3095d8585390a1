import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { createApp } from "../../src/app";
import { scheduled } from "../../src/cron";
import { processDeps } from "../../src/bindings";
import { runMediaJob } from "../../src/uploads/media-jobs/jobs";
import type { MediaJobParams } from "../../src/uploads/media-jobs/runner";

export const ORIGIN = "http://media.test";

export function request(path: string, init: RequestInit = {}): Promise<Response> {
  return exports.default.fetch(new Request(`${ORIGIN}${path}`, init));
}

export async function json<T = any>(response: Response | Promise<Response>): Promise<{ status: number; body: T; headers: Headers }> {
  const r = await response;
  return { status: r.status, body: (await r.json()) as T, headers: r.headers };
}

export function admin(path: string, init: Omit<RequestInit, "body"> & { body?: unknown } = {}) {
  const { body, ...rest } = init;
  return request(`/admin${path}`, {
    ...rest,
    headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}`, "Content-Type": "application/json", ...(rest.headers as object) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

export interface TestAccount {
  id: string;
  full: string;
  upload: string;
}

export async function newAccount(name = "test"): Promise<TestAccount> {
  const { status, body } = await json(admin("/accounts", { method: "POST", body: { name } }));
  if (status !== 201) throw new Error(`account creation failed: ${status} ${JSON.stringify(body)}`);
  return { id: body.data.id, full: body.data.full_key, upload: body.data.upload_key };
}

export async function fixture(relativePath: string): Promise<Uint8Array> {
  const response = await env.FIXTURES.fetch(`http://fixtures/${relativePath}`);
  if (!response.ok) throw new Error(await response.text());
  return new Uint8Array(await response.arrayBuffer());
}

/** Every file of test/fixtures, by relative path (`tiny/gif.gif`). */
export async function fixtureNames(): Promise<string[]> {
  return (await env.FIXTURES.fetch("http://fixtures/")).json<string[]>();
}

/** Distinct bytes that still sniff as a PNG, for tests that need many different files. */
export async function uniquePng(seed: string | number): Promise<Uint8Array> {
  const base = await fixture("tiny/png-transparent.png");
  const tail = new TextEncoder().encode(`#${seed}`);
  const out = new Uint8Array(base.length + tail.length);
  out.set(base);
  out.set(tail, base.length);
  return out;
}

export function uploadForm(file: Uint8Array | null, fields: Record<string, string> = {}, filename = "file.bin") {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  if (file) form.append("uploads", new Blob([file]), filename);
  return form;
}

export function upload(key: string, file: Uint8Array | null, fields: Record<string, string> = {}, headers: Record<string, string> = {}) {
  return json(request("/api", { method: "POST", headers: { "X-API-Key": key, ...headers }, body: uploadForm(file, fields) }));
}

export function api(key: string, path: string, init: RequestInit = {}) {
  return json(request(`/api${path}`, { ...init, headers: { "X-API-Key": key, ...(init.headers as object) } }));
}

/** Runs what the cron job runs, now (the media jobs the upload responses left behind). */
export async function runCron(): Promise<void> {
  await scheduledInline(env);
}

/**
 * A structurally valid PNG of about `bytes` bytes: the header of a 1x1 PNG, then one IDAT chunk
 * of arbitrary data with a correct CRC (nothing decodes pixels on upload, only the structure is
 * checked), then IEND.
 */
export async function bigPng(bytes: number, seed = 1): Promise<Uint8Array> {
  const { crc32 } = await import("../../src/media/strip/crc32");
  const base = await fixture("tiny/png-transparent.png");
  const header = base.subarray(0, 33); // signature + IHDR
  const data = new Uint8Array(bytes);
  for (let i = 0; i < data.length; i += 4096) data[i] = (i / 4096 + seed) & 0xff;
  const chunk = new Uint8Array(12 + data.length);
  const view = new DataView(chunk.buffer);
  view.setUint32(0, data.length);
  chunk.set(new TextEncoder().encode("IDAT"), 4);
  chunk.set(data, 8);
  view.setUint32(8 + data.length, crc32(chunk.subarray(4, 8 + data.length)));
  const iend = new Uint8Array([0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82]);
  const out = new Uint8Array(header.length + chunk.length + iend.length);
  out.set(header);
  out.set(chunk, header.length);
  out.set(iend, header.length + chunk.length);
  return out;
}

/** A media service address where nothing answers. */
export const DEAD_SERVICE = "http://127.0.0.1:9";

export interface AppOptions {
  /** Bindings that differ from the test environment's. */
  bindings?: Partial<Cloudflare.Env>;
  /** The app's clock. */
  now?: () => number;
}

/**
 * The one way tests drive the Worker's app: a request, and the work it left running after its
 * response (conversions, thumbnails), which `settled` waits for.
 */
export function startApp(request: Request, { bindings = {}, now }: AppOptions = {}) {
  const ctx = createExecutionContext();
  const merged = { ...env, ...bindings };
  if (!bindings.MEDIA_JOBS) merged.MEDIA_JOBS = inlineJobs(merged, now);
  const response = createApp(now ? { now } : {}).fetch(request, merged, ctx);
  return { response: Promise.resolve(response), settled: () => afterResponseWork(ctx) };
}

/**
 * Deployed, work left running after a response is cancelled 30 s after it (Workers docs: Context,
 * waitUntil). A test whose request leaves longer work behind fails here, as that work would be
 * cut short in production.
 */
export const AFTER_RESPONSE_LIMIT_MS = 30_000;
const afterResponseWork = (ctx: ExecutionContext) =>
  answerWithin(AFTER_RESPONSE_LIMIT_MS, "the work after the response (deployed, it is cancelled at 30 s)", waitOnExecutionContext(ctx));

/**
 * A stand-in for the MEDIA_JOBS Workflow binding that runs each job's attempt at once, in the
 * caller, with the given bindings and clock: tests of the jobs' own logic (a dead service, a
 * clock moved past a lease) see an attempt's outcome as soon as the request's after-response work
 * or the cron run is done. The real Workflow runs them in test/worker/uploads/media-job-runner.test.ts
 * and in every end-to-end test under test/node.
 */
export function inlineJobs(bindings: Cloudflare.Env, now?: () => number): Workflow<MediaJobParams> {
  const runner = {
    async create(options?: { params?: MediaJobParams }) {
      await runMediaJob(processDeps({ ...bindings, MEDIA_JOBS: runner as unknown as Workflow<MediaJobParams> }, undefined, now), options!.params!.jobId);
      return { id: options!.params!.jobId };
    },
  };
  return runner as unknown as Workflow<MediaJobParams>;
}

/** The cron job, with the jobs it re-drives run inline (inlineJobs) on the same bindings and clock. */
export const scheduledInline = (bindings: Cloudflare.Env, now?: () => number) =>
  scheduled({ ...bindings, MEDIA_JOBS: inlineJobs(bindings, now) }, now);

/** A request through the app, answered once the work it left running is done. */
export async function runApp(request: Request, options: AppOptions = {}): Promise<Response> {
  const started = startApp(request, options);
  const response = await started.response;
  await started.settled();
  return response;
}

/** `answer`, or a failure naming `what` if it takes longer than `ms`: a request must never hang. */
export async function answerWithin<T>(ms: number, what: string, answer: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([answer, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Uploads through the app with some bindings overridden, once the work the upload started is done. */
export async function uploadWithEnv(
  account: TestAccount,
  bytes: Uint8Array,
  overrides: Partial<Cloudflare.Env> = {},
  fields: Record<string, string> = {},
) {
  const response = await runApp(
    new Request(`${ORIGIN}/api`, { method: "POST", headers: { "X-API-Key": account.full }, body: uploadForm(bytes, fields) }),
    { bindings: overrides },
  );
  const body = (await response.json()) as { data: Record<string, any> };
  if (response.status !== 200) throw new Error(`upload failed: ${response.status} ${JSON.stringify(body)}`);
  return body.data;
}

/** An IPv6 /64 of a test's own, as its first four groups: per-IP throttles count a /64 as one client. */
export function ownNetwork(): string {
  const hex = crypto.randomUUID().replace(/-/g, "");
  return `2001:db8:${hex.slice(0, 4)}:${hex.slice(4, 8)}`;
}

export interface AppCall extends RequestInit {
  /** Sent as X-API-Key. */
  key?: string;
  /** The client's address, as CF-Connecting-IP. */
  ip?: string;
}

/**
 * The app on a clock the test moves (`clock.now`), with some bindings overridden. `call` sends
 * one request (a path or a whole URL) and waits for the work it left running.
 */
export function clockedApp(bindings: Partial<Cloudflare.Env> = {}, start = Date.now()) {
  const clock = { now: start };
  async function call(path: string, { key, ip, ...init }: AppCall = {}) {
    const headers = new Headers(init.headers);
    if (key) headers.set("X-API-Key", key);
    if (ip) headers.set("CF-Connecting-IP", ip);
    const url = path.startsWith("http") ? path : `${ORIGIN}${path}`;
    return runApp(new Request(url, { redirect: "manual", ...init, headers }), { bindings, now: () => clock.now });
  }
  return { clock, call };
}

/** A request through the app with some bindings overridden; waits for the work it left running. */
export async function fetchWithEnv(path: string, init: RequestInit, overrides: Partial<Cloudflare.Env> = {}) {
  const response = await runApp(new Request(`${ORIGIN}${path}`, init), { bindings: overrides });
  const body = await response.json<any>();
  return { status: response.status, body, headers: response.headers };
}

/** A public URL of the service, fetched, with its bytes. */
export async function served(url: string) {
  const res = await request(new URL(url).pathname);
  return { res, bytes: new Uint8Array(await res.arrayBuffer()) };
}
