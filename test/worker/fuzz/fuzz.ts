import { env } from "cloudflare:workers";
import fc from "fast-check";
import { expect, vi } from "vitest";
import { answerWithin, ORIGIN, startApp } from "../helpers";
import { afterCase, expectStanding } from "./canary";

/**
 * What every fuzz property shares: a fixed seed, so a failure found once is found again, and the
 * pass condition for a request (it answers, never with a 5xx, errors in the envelope, nothing
 * stored when refused, and the Worker still standing after it: canary.ts).
 *
 * FUZZ_SEED and FUZZ_RUNS (environment variables of `npx vitest`) replay another seed or run a
 * longer campaign; a failure names the seed and path that reproduce it.
 */
export const SEED = Number(env.FUZZ_SEED) || 20260705;

/** Runs per property: `normal` unless FUZZ_RUNS says otherwise. */
export const runs = (normal: number) => Number(env.FUZZ_RUNS) || normal;

/**
 * Cases per corpus file (the corpora count theirs per file, not per property): `normal`, scaled
 * by FUZZ_RUNS as a property of 100 runs would be.
 */
export const perFile = (normal: number) => Math.max(normal, Math.round((normal * runs(100)) / 100));

// A longer campaign gives every test as much more time as it has more runs.
if (runs(100) > 100) vi.setConfig({ testTimeout: Math.round((60_000 * runs(100)) / 100) });

/** Runs the property under the suite's seed; a failure says how to replay it. Then the canary. */
export async function checkProperty<T>(property: fc.IRawProperty<T>, numRuns: number) {
  const details = await fc.check(property, { seed: SEED, numRuns: runs(numRuns), includeErrorInReport: true });
  if (details.failed) {
    // fast-check's own report (counterexample, shrunk), led by how to replay it.
    const replay = `FUZZ_SEED=${details.seed} (path ${details.counterexamplePath}, after ${details.numRuns} runs)`;
    throw new Error(`${replay}\n${fc.defaultReportMessage(details)}`, { cause: details.errorInstance });
  }
  await expectStanding();
}

/** Longest a request may take to answer; a hostile body must never make one hang. */
const ANSWER_MS = 15_000;

/**
 * The app's answer to `request`, after the work it left running (media jobs) is done, so that
 * the storage seen by the next run is settled, and the isolate is checked (canary.ts): a case
 * ends here, so a case that leaves it unwell fails as itself, with its seed and path.
 */
export async function send(request: Request): Promise<{ status: number; headers: Headers; text: string }> {
  const started = startApp(request);
  const answer = await answerWithin(
    ANSWER_MS,
    `${request.method} ${request.url}`,
    started.response.then(async (response) => ({
      status: response.status,
      headers: response.headers,
      text: new TextDecoder().decode(await response.arrayBuffer()),
    })),
  );
  await started.settled();
  await afterCase(`${request.method} ${request.url.slice(0, 200)}`);
  return answer;
}

export const url = (path: string) => `${ORIGIN}${path}`;

/** No 5xx, and an error (JSON, as every API and file route answers) is exactly the envelope. */
export function expectWellFormed(
  answer: { status: number; headers: Headers; text: string },
  what: string,
  options: { htmlPages?: boolean } = {},
) {
  expect(answer.status, `${what}: ${answer.text.slice(0, 300)}`).toBeLessThan(500);
  if (answer.status < 400) return;
  const type = answer.headers.get("content-type") ?? "";
  // Pages answer a person: a wrong password or a gone upload is an HTML page, by design.
  if (options.htmlPages && type.startsWith("text/html")) return;
  expect(type, what).toMatch(/^application\/json/);
  const body = JSON.parse(answer.text) as Record<string, unknown>;
  expect(Object.keys(body).sort(), what).toEqual(["errors", "type"]);
  expect(body.type, what).toBe("error");
  expect(typeof body.errors, what).toBe("string");
}

export interface StoredState {
  uploads: number;
  jobs: number;
  sessions: number;
  pieces: number;
  objects: string[];
}

/** The rows of each table, counted in one round trip to D1 (a check runs after every case). */
async function counts(tables: string[]): Promise<number[]> {
  const results = await env.DB.batch<{ n: number }>(
    tables.map((table) => env.DB.prepare(`SELECT count(*) AS n FROM ${table}`)),
  );
  return results.map((result) => result.results[0]!.n);
}

async function objectKeys(): Promise<string[]> {
  const keys: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ cursor });
    keys.push(...page.objects.map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return keys.sort();
}

/** Everything a request could leave behind: rows of uploads, jobs, piece sessions and their pieces, and objects. */
export async function storedState(): Promise<StoredState> {
  const [uploads, jobs, sessions, pieces] = await counts(["uploads", "media_jobs", "chunk_sessions", "chunk_pieces"]);
  return { uploads: uploads!, jobs: jobs!, sessions: sessions!, pieces: pieces!, objects: await objectKeys() };
}

/** A refused request leaves storage exactly as it was. */
export async function expectNothingStored(before: StoredState, what: string) {
  expect(await storedState(), what).toEqual(before);
}
