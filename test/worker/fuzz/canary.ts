import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { isolateMemory } from "../../../src/limits/isolate-memory";
import { answerWithin, newAccount, startApp, uniquePng, uploadForm, type TestAccount } from "../helpers";

/**
 * Proof, after fuzz cases, that the Worker is still standing.
 *
 * Workers tests run inside workerd, in the very isolate that serves the requests: a case that
 * crashed it (a WebAssembly codec taking the process down, a runtime assertion) would fail the
 * test run itself, so reaching the next case already says that it did not crash. What an isolate
 * that survived can still get wrong is checked here: memory a request reserved in the isolate's
 * account (src/limits/isolate-memory.ts) and never gave back, which every later request would
 * miss until uploads were refused with 503; and a state in which it no longer takes a plain
 * upload (a codec left broken, a lock never released).
 *
 * The account is read after every case: it costs nothing. The canary upload costs about 30 ms,
 * more than a typical case (about 2,400 cases through the routes in the fuzz files): after every
 * case it took the fuzz files from 94 s to 173 s on two cores. So it runs after every
 * CANARY_EVERY cases, at the end of every property and corpus test, and after each real corrupt
 * file, for a few seconds in all; a failure names the cases since the last canary that passed.
 */
export const CANARY_EVERY = 20;

/** The cases since the last canary, and the first after which memory stayed reserved. */
let since: string[] = [];
let firstLeak: string | null = null;

function expectNothingReserved(what: string) {
  if (isolateMemory.reserved !== 0) firstLeak ??= what;
  const first = firstLeak && firstLeak !== what ? ` (first seen after ${firstLeak})` : "";
  expect(
    isolateMemory.reserved,
    `${isolateMemory.reserved} bytes of the isolate's memory still reserved after ${what}${first}`,
  ).toBe(0);
}

/** After each case, once its request and the work it left are done. */
export async function afterCase(what: string) {
  expectNothingReserved(what);
  since.push(what);
  if (since.length >= CANARY_EVERY) await expectStanding();
}

let account: Promise<TestAccount> | undefined;
let canaries = 0;

/**
 * The canary: a small valid PNG (unique, so that duplicate detection stays out of it) is taken
 * with a 200, and its thumbnail is made in its own request, by the Worker's WebAssembly codecs
 * (which a damaged file may have left broken); then it is removed, so storage is as it was.
 */
export async function expectStanding() {
  const cases = since;
  since = [];
  const after = cases.length
    ? ` after ${cases.length} cases since the last one, from ${cases[0]} to ${cases.at(-1)}`
    : "";
  expectNothingReserved(`the cases before the canary${after}`);
  account ??= newAccount("canary");
  const key = (await account).full;
  const bytes = await uniquePng(`canary-${++canaries}-${crypto.randomUUID()}`);
  const started = startApp("/api", { method: "POST", key, body: uploadForm(bytes) });
  const answer = await answerWithin(
    10_000,
    `the canary upload${after}`,
    started.response.then(async (response) => ({ status: response.status, text: await response.text() })),
  );
  await started.settled();
  expect(answer.status, `the canary upload failed${after}: ${answer.text.slice(0, 300)}`).toBe(200);
  const upload = JSON.parse(answer.text).data as { id: string; thumb: string | null };
  expect(upload.thumb, `the canary's thumbnail was not made in its request${after}`).toEqual(expect.any(String));
  await removeUpload(upload.id);
  expectNothingReserved(`the canary upload${after}`);
}

/** Removes an accepted upload's files and rows, so that every request starts from the same state. */
export async function removeUpload(uploadId: string) {
  const objects = await env.FILES.list({ prefix: `uploads/${uploadId}/` });
  if (objects.objects.length) await env.FILES.delete(objects.objects.map((o) => o.key));
  await env.DB.batch([
    env.DB.prepare("DELETE FROM media_jobs WHERE upload_id = ?").bind(uploadId),
    env.DB.prepare("DELETE FROM uploads WHERE id = ?").bind(uploadId),
  ]);
}
