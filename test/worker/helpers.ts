import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { createAccount } from "../../scripts/lib/accounts.mjs";
import { createApp } from "../../src/entry/app";
import { scheduled } from "../../src/entry/cron";
import { mediaJobDeps } from "../../src/deps";
import { runMediaJob } from "../../src/uploads/media-jobs/jobs";
import type { MediaJobParams } from "../../src/uploads/media-jobs/runner";
import { PNG_OVERHEAD, sizedPng } from "../support/png";

export const ORIGIN = "http://media.test";

export interface AppOptions {
  /** Bindings that differ from the test environment's. */
  bindings?: Partial<Cloudflare.Env>;
  /** The app's clock. */
  now?: () => number;
}

/** A request as tests write it: what fetch takes, and the headers they set most often, as options. */
export interface Call extends RequestInit {
  /** Sent as X-API-Key. */
  key?: string;
  /** The client's address, as CF-Connecting-IP. */
  ip?: string;
  /** Sends the admin token, and a JSON Content-Type (the admin API's). */
  admin?: boolean;
  /** A body, sent as JSON. */
  json?: unknown;
  /**
   * Sends to the app itself on these bindings and clock, its media jobs run inline (inlineJobs),
   * and answers once the work the request left running is done: what the Worker as deployed cannot
   * show (a dead media service, a moved clock, that work itself).
   */
  app?: AppOptions;
}

/**
 * The one way tests send a request: a path (or a whole URL, or a Request built whole, which goes
 * as it is) to the Worker's own fetch handler, as deployed, whose media jobs run on the real
 * Workflow after the answer; or, with `app`, to the app under the test's control.
 */
export async function request(target: string | Request, init: Call = {}): Promise<Response> {
  if (!init.app) return exports.default.fetch(toRequest(target, init));
  const started = startApp(target, init);
  const response = await started.response;
  await started.settled();
  return response;
}

let defaultApp: ReturnType<typeof createApp> | undefined;
/** One app serves every request as deployed (src/entry/index.ts); a clock of the test's makes its own. */
function appFor(now?: () => number) {
  if (now) return createApp({ now });
  defaultApp ??= createApp();
  return defaultApp;
}

/** A request to the app as `request` with `app` sends it, answered before the work it leaves running. */
export function startApp(target: string | Request, init: Call = {}) {
  const { bindings = {}, now } = init.app ?? {};
  const ctx = createExecutionContext();
  const merged = { ...env, ...bindings };
  if (!bindings.MEDIA_JOBS) merged.MEDIA_JOBS = inlineJobs(merged, now);
  const response = appFor(now).fetch(toRequest(target, init), merged, ctx);
  return { response: Promise.resolve(response), settled: () => afterResponseWork(ctx) };
}

function toRequest(target: string | Request, { key, ip, admin, json, app: _, ...init }: Call): Request {
  if (typeof target !== "string") return target;
  const headers = new Headers();
  if (key) headers.set("X-API-Key", key);
  if (ip) headers.set("CF-Connecting-IP", ip);
  if (admin) headers.set("Authorization", `Bearer ${env.ADMIN_TOKEN}`);
  if (admin || json !== undefined) headers.set("Content-Type", "application/json");
  // Headers given outright win: a test may send a wrong key or token on purpose.
  for (const [name, value] of new Headers(init.headers)) headers.set(name, value);
  const body = json === undefined ? init.body : JSON.stringify(json);
  return new Request(target.startsWith("http") ? target : `${ORIGIN}${target}`, { ...init, headers, body });
}

/** A response's status, headers and JSON body. */
export async function json<T = any>(
  response: Response | Promise<Response>,
): Promise<{ status: number; body: T; headers: Headers }> {
  const r = await response;
  return { status: r.status, body: (await r.json()) as T, headers: r.headers };
}

/** A response with its bytes (a served file). */
export async function bytesOf(response: Response | Promise<Response>) {
  const res = await response;
  return { res, bytes: new Uint8Array(await res.arrayBuffer()) };
}

/**
 * The app on a clock the test moves (`clock.now`), with some bindings overridden: `call` sends
 * one request as `request` does with `app`.
 */
export function clockedApp(bindings: Partial<Cloudflare.Env> = {}, start = Date.now()) {
  const clock = { now: start };
  const app = { bindings, now: () => clock.now };
  const call = (target: string, init: Call = {}) => request(target, { ...init, app });
  return { clock, call };
}

export interface TestAccount {
  id: string;
  full: string;
  upload: string;
}

export async function newAccount(name = "test"): Promise<TestAccount> {
  const account = await createAccount({ origin: ORIGIN, adminToken: env.ADMIN_TOKEN, name, send: request });
  return { id: account.id, full: account.full_key, upload: account.upload_key };
}

export function uploadForm(file: Uint8Array | null, fields: Record<string, string> = {}, filename = "file.bin") {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  if (file) form.append("uploads", new Blob([file]), filename);
  return form;
}

/** POST /api of one file with `key`, read as JSON: the step most tests start from. */
export function upload(key: string, file: Uint8Array | null, fields: Record<string, string> = {}, init: Call = {}) {
  return json(request("/api", { ...init, method: "POST", key, body: uploadForm(file, fields) }));
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

/** A PNG whose IDAT holds `bytes` bytes, a pattern of `seed` (test/support/png.ts). */
export async function bigPng(bytes: number, seed = 1): Promise<Uint8Array> {
  return sizedPng(bytes + PNG_OVERHEAD, (data) => {
    for (let i = 0; i < data.length; i += 4096) data[i] = (i / 4096 + seed) & 0xff;
  });
}

/** A media service address where nothing answers. */
export const DEAD_SERVICE = "http://127.0.0.1:9";

/**
 * Deployed, work left running after a response is cancelled 30 s after it (Workers docs: Context,
 * waitUntil). A test whose request leaves longer work behind fails here, as that work would be
 * cut short in production.
 */
const AFTER_RESPONSE_LIMIT_MS = 30_000;
const afterResponseWork = (ctx: ExecutionContext) =>
  answerWithin(
    AFTER_RESPONSE_LIMIT_MS,
    "the work after the response (deployed, it is cancelled at 30 s)",
    waitOnExecutionContext(ctx),
  );

/**
 * A stand-in for the MEDIA_JOBS Workflow binding that runs each job's attempt at once, in the
 * caller, with the given bindings and clock: tests of the jobs' own logic (a dead service, a
 * clock moved past a lease) see an attempt's outcome as soon as the request's after-response work
 * or the cron run is done. The real Workflow runs the jobs of requests sent without `app`, and is
 * checked in test/worker/uploads/media-job-runner.test.ts and the end-to-end tests under test/node.
 */
export function inlineJobs(bindings: Cloudflare.Env, now?: () => number): Workflow<MediaJobParams> {
  const run = async (options?: { params?: MediaJobParams }) => {
    const deps = mediaJobDeps({ ...bindings, MEDIA_JOBS: workflow }, undefined, now);
    // As the Workflow does: a phase done goes straight on to the next (a video's ladder).
    while ((await runMediaJob(deps, options!.params!.jobId)).outcome === "next");
    return { id: options!.params!.jobId };
  };
  const runner = {
    create: run,
    createBatch: (batch: { params?: MediaJobParams }[]) => Promise.all(batch.map(run)),
    // No runner outlives its attempt here: the cron job finds none and starts one.
    get: async () => {
      throw new Error("instance.not_found");
    },
  };
  const workflow = runner as unknown as Workflow<MediaJobParams>;
  return workflow;
}

/**
 * The cron job, with the jobs it re-drives run inline (inlineJobs) on the same bindings and clock:
 * not a request, so called directly rather than through the Worker.
 */
export const scheduledInline = (bindings: Cloudflare.Env, now?: () => number) =>
  scheduled({ ...bindings, MEDIA_JOBS: inlineJobs(bindings, now) }, now);

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

/** An IPv6 /64 of a test's own, as its first four groups: per-IP throttles count a /64 as one client. */
export function ownNetwork(): string {
  const hex = crypto.randomUUID().replace(/-/g, "");
  return `2001:db8:${hex.slice(0, 4)}:${hex.slice(4, 8)}`;
}

/**
 * Waits for the clock to pass the current millisecond: rows made one after another then differ
 * in their times, and a listing newest first has one right order (two made in one millisecond
 * tie, and their order is the ids', random).
 */
export async function nextMillisecond(): Promise<void> {
  const now = Date.now();
  while (Date.now() === now) await new Promise((r) => setTimeout(r, 1));
}

/** `target` with the first character of its link signature changed, so that it never still matches. */
export const tamperedSignature = (target: string) =>
  target.replace(/sig=([0-9a-f])/, (_m, c: string) => `sig=${c === "0" ? "1" : "0"}`);

/** PATCH /api/{id} with a JSON body, read as JSON. */
export const patchUpload = (key: string, id: string, body: unknown) =>
  json(
    request(`/api/${id}`, {
      key,
      method: "PATCH",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    }),
  );

/**
 * Objects under uploads/ that belong to no upload: what a refused or failed request must never
 * leave behind. (Counting all objects would race with conversions of earlier tests' videos.)
 * Only objects stored since this test file began count: in the shared workerd
 * (`SHARED_RUNTIME_TESTS`), a file run earlier may have left strays on purpose (a crash tested).
 */
/** When the running test file began (test/worker/setup.ts, which runs before each file). */
const fileStartedAt = () => (globalThis as { testFileStartedAt?: number }).testFileStartedAt ?? 0;

export async function strayObjects(): Promise<string[]> {
  const keys: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ prefix: "uploads/", cursor });
    keys.push(...page.objects.filter((o) => o.uploaded.getTime() >= fileStartedAt()).map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  const ids = new Set((await env.DB.prepare("SELECT id FROM uploads").all<{ id: string }>()).results.map((r) => r.id));
  return keys.filter((key) => !ids.has(key.split("/")[1]!));
}

/**
 * Objects stored since `since` (a `Date.now()` taken before the requests) and still there, less
 * those of other accounts' uploads (of every upload, without `account`): what a refused request of
 * `account` must not leave, checked
 * without counting the whole bucket. Files sharing a workerd (`SHARED_RUNTIME_TESTS`) run after
 * others whose media jobs may still be writing their own uploads' variants; anything else stored
 * since (a stray under uploads/, pieces under chunks/, an object of this account's uploads) counts.
 */
export async function storedSince(since: number, account?: { id: string }): Promise<string[]> {
  const keys: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ cursor });
    keys.push(...page.objects.filter((o) => o.uploaded.getTime() >= since).map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  const others = new Set(
    (
      await env.DB.prepare("SELECT id FROM uploads WHERE account_id != ?")
        .bind(account?.id ?? "")
        .all<{ id: string }>()
    ).results.map((r) => r.id),
  );
  return keys.filter((key) => !(key.startsWith("uploads/") && others.has(key.split("/")[1]!)));
}
