import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { toHex } from "../../../src/crypto";
import { database } from "../../../src/storage/db";
import { findUploadInAnyState } from "../../../src/storage/uploads";
import { hookUrl, insertEndpoint } from "../webhooks/endpoint-rows";
import { bigPng, type Call, DEAD_SERVICE, scheduledInline, startApp } from "../helpers";

/**
 * Crashes at each storage step, for the tests that check every way an operation can be cut short
 * leaves the old state or the new one (consistency.test.ts, tus-consistency.test.ts).
 */

/** The media service down: thumbnail jobs fail at once rather than send megabytes to it. */
export const noService = { MEDIA_SERVICE_URL: DEAD_SERVICE };
export const serviceDown = (bindings: Partial<Cloudflare.Env>) => ({ ...bindings, ...noService });

const R2_CALLS = new Set(["put", "get", "head", "delete", "list", "createMultipartUpload"]);
/** The calls of a multipart upload (as createMultipartUpload or resumeMultipartUpload gives it). */
const MULTIPART_CALLS = new Set(["uploadPart", "complete", "abort"]);

export interface Fault {
  bindings: Partial<Cloudflare.Env>;
  steps: () => number;
  /** Every multipart upload the operation began or resumed. */
  multipartUploads: R2MultipartUpload[];
}

/**
 * Whether drizzle's D1 batch is on the stack. Read from V8's call sites rather than the stack's
 * text: the test runner maps that text through the source maps of every frame, which cost about
 * 3 ms for each statement a crash walk prepares (consistency.test.ts: 5 s of its 51 s of CPU).
 */
function inDrizzleBatch(): boolean {
  const original = Error.prepareStackTrace;
  Error.prepareStackTrace = (_error, sites) =>
    sites.some((site) => site.getTypeName() === "SQLiteD1Session" && site.getFunctionName() === "batch");
  try {
    return new Error().stack as unknown as boolean;
  } finally {
    Error.prepareStackTrace = original;
  }
}

/**
 * Bindings whose `failAt`-th storage operation (a D1 statement prepared, or a batch's statements,
 * a batch sent, or an R2 call, including those of a multipart upload) fails, as a crash at that point would leave things.
 * With `down`, every later operation fails too, as in an outage: what the code does to clean
 * up fails as well. `steps()` tells how many operations ran.
 */
export function failing(failAt: number, down = false): Fault {
  let count = 0;
  const multipartUploads: R2MultipartUpload[] = [];
  const fails = () => ++count === failAt || (down && count > failAt);
  /**
   * drizzle prepares the statements of one D1 batch in one synchronous run, then sends them: a
   * failure at any of those prepares leaves what a failure at the first does (nothing sent), so
   * they count as one step, and the batch's sending as the next. Told apart from statements
   * prepared alone by drizzle's batch on the stack.
   */
  let preparingBatch = false;
  const counts = (name: string) => {
    if (name !== "prepare" || !inDrizzleBatch()) return true;
    if (preparingBatch) return false;
    preparingBatch = true;
    queueMicrotask(() => {
      preparingBatch = false;
    });
    return true;
  };
  const failure = () => new Error(`injected failure at storage step ${failAt}`);
  // D1's prepare() throws where it is called; an R2 call fails as R2 does, with a rejected promise.
  const wrap = <T extends object>(target: T, counted: (name: string) => boolean, rejects = true): T =>
    new Proxy(target, {
      get(object, name) {
        const value = Reflect.get(object, name);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (counted(String(name)) && counts(String(name)) && fails()) {
            if (rejects) return Promise.reject(failure());
            throw failure();
          }
          const result = value.apply(object, args);
          if (name === "createMultipartUpload") return (result as Promise<R2MultipartUpload>).then(multipart);
          if (name === "resumeMultipartUpload") return multipart(result as R2MultipartUpload);
          // A D1 session's statements are the database's.
          if (name === "withSession") return wrap(result as D1DatabaseSession, counted, rejects);
          return result;
        };
      },
    });
  const multipart = (upload: R2MultipartUpload) => {
    multipartUploads.push(upload);
    return wrap(upload, (n) => MULTIPART_CALLS.has(n));
  };
  return {
    bindings: {
      FILES: wrap(env.FILES, (n) => R2_CALLS.has(n)),
      DB: wrap(env.DB, (n) => n === "prepare" || n === "batch", false),
    } as Partial<Cloudflare.Env>,
    steps: () => count,
    multipartUploads,
  };
}

/**
 * The multipart uploads still in progress (neither completed nor aborted), which no listing
 * shows and the cron job's sweep cannot find. Each is aborted once found.
 */
export async function unfinished(uploads: R2MultipartUpload[]): Promise<string[]> {
  const open: string[] = [];
  for (const { key, uploadId } of uploads) {
    const probe = env.FILES.resumeMultipartUpload(key, uploadId);
    try {
      await probe.uploadPart(1, new Uint8Array(1));
    } catch (error) {
      if (!/NoSuchUpload|does not exist/i.test(String(error))) throw error;
      continue;
    }
    open.push(key);
    await probe.abort();
  }
  return open;
}

export async function call(path: string, init: Call, bindings: Partial<Cloudflare.Env> = {}) {
  const started = startApp(path, { ...init, app: { bindings } });
  const res = await started.response;
  // Storage may be down on purpose: the work left running may fail.
  await started.settled().catch(() => {});
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}

/** The cron job's run past the sweeps' grace period; `bindings` as for the operation checked. */
export const sweep = (bindings: Partial<Cloudflare.Env> = {}) =>
  scheduledInline({ ...env, ...bindings }, () => Date.now() + 2 * 3600_000).catch(() => {});

/** After the cron job's sweeps (past the grace period): the row's files exist, nothing else is stored. */
export async function expectConsistent(id: string, bindings?: Partial<Cloudflare.Env>) {
  await sweep(bindings);
  const row = await findUploadInAnyState(database(env.DB), id);
  const stored = (await env.FILES.list({ prefix: `uploads/${id}/` })).objects.map((o) => o.key).sort();
  const expected =
    row && row.filesRemovedAt === null ? [row.objectKey, ...(row.thumbKey ? [row.thumbKey] : [])].sort() : [];
  expect(stored, JSON.stringify(row)).toEqual(expected);
  return row;
}

/**
 * Nothing of a failed upload may stay (its files go at once or with the sweep): every object is an
 * upload's, in any state. `swept` where the check comes right after expectConsistent's sweep.
 */
export async function expectNoStrayObjects(bindings?: Partial<Cloudflare.Env>, { swept = false } = {}) {
  if (!swept) await sweep(bindings);
  const rows = await env.DB.prepare("SELECT id FROM uploads").all<{ id: string }>();
  const ids = new Set(rows.results.map((row) => row.id));
  for (const object of (await env.FILES.list({ prefix: "uploads/" })).objects) {
    expect(ids.has(object.key.split("/")[1]!), object.key).toBe(true);
  }
}

/** An endpoint of the account taking every event, so that its changes write their events. */
export const webhookEndpoint = (accountId: string) => insertEndpoint(accountId, hookUrl("crash-steps"));

/**
 * The outbox held (the account has an endpoint): every upload of the account that committed has
 * exactly one upload.created, and no upload.created is about an upload that was never committed.
 * Returns how many uploads it has.
 */
export async function expectCreatedEvents(accountId: string) {
  const { results } = await env.DB.prepare(
    `SELECT u.id AS upload, e.subject_id AS event FROM uploads u
       LEFT JOIN (SELECT json_extract(subject, '$.id') AS subject_id FROM webhook_events
         WHERE account_id = ?1 AND type = 'upload.created') e ON e.subject_id = u.id
     WHERE u.account_id = ?1
     UNION ALL
     SELECT NULL, json_extract(subject, '$.id') FROM webhook_events
     WHERE account_id = ?1 AND type = 'upload.created'
       AND json_extract(subject, '$.id') NOT IN (SELECT id FROM uploads WHERE account_id = ?1)`,
  )
    .bind(accountId)
    .all<{ upload: string | null; event: string | null }>();
  for (const { upload, event } of results) expect({ upload, event }).toEqual({ upload: event, event: upload });
  expect(new Set(results.map((r) => r.upload)).size).toBe(results.length);
  return results.length;
}

/** The request was answered: with the upload, or with the service's error envelope. */
export function expectAnswered(outcome: Awaited<ReturnType<typeof call>> | string) {
  expect(outcome).toMatchObject({ status: expect.any(Number) });
  const { status, body } = outcome as Awaited<ReturnType<typeof call>>;
  if (status !== 200) expect(body).toEqual({ type: "error", errors: expect.any(String) });
}

export const sha256 = async (bytes: ArrayBuffer | Uint8Array) =>
  toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));

/** What a client sent: its size and SHA-256. */
export interface Sent {
  size: number;
  hash: string;
}

/** A PNG whose image data is `size` bytes, and what sending it sends (its size and hash). */
export const pngToSend = async (size: number) => {
  const bytes = await bigPng(size);
  const sent: Sent = { size: bytes.length, hash: await sha256(bytes) };
  return { bytes, sent };
};

/** The row's file is stored whole: the bytes sent (`size` of them, hashing to `hash`), with the etag the row says. */
export async function expectStoredWhole(
  row: NonNullable<Awaited<ReturnType<typeof findUploadInAnyState>>>,
  sent: Sent,
) {
  const object = await env.FILES.get(row.objectKey);
  expect(object, row.objectKey).not.toBeNull();
  expect(object!.size).toBe(sent.size);
  expect(row.size).toBe(sent.size);
  expect(row.etag).toBe(object!.httpEtag);
  expect(await sha256(await object!.arrayBuffer())).toBe(sent.hash);
}

/**
 * Runs `operation` failing at each storage step in turn (with `down`, failing from that step on),
 * until it runs through without reaching the failure.
 */
export async function atEveryStep<Outcome>(
  prepare: () => Promise<{ id: string; before: string | null }>,
  operation: (bindings: Partial<Cloudflare.Env>, id: string) => Promise<Outcome>,
  after: (id: string, before: string | null, fault: Fault, outcome: Outcome | string) => Promise<void>,
  down = false,
) {
  for (let step = 1; step < 100; step++) {
    const { id, before } = await prepare();
    const fault = failing(step, down);
    const outcome = await operation(fault.bindings, id).catch((error) => String(error));
    try {
      await after(id, before, fault, outcome);
    } catch (error) {
      throw new Error(`failing at step ${step} (${JSON.stringify(outcome)?.slice(0, 300)}): ${error}`);
    }
    if (fault.steps() < step) return step - 1;
  }
  throw new Error("the operation never finished");
}
