import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { concatBytes } from "../../../src/bytes";
import { ApiError } from "../../../src/errors";
import { readImageHeader } from "../../../src/media/image-info";
import { sniff, type Format } from "../../../src/media/sniff";
import { stripperFor } from "../../../src/media/strip";
import { MAX_HELD_BYTES } from "../../../src/media/strip/stripper";
import { prng } from "../../support/build";
import { answerWithin, DEAD_SERVICE, newAccount, ORIGIN, startApp, uploadForm, type TestAccount } from "../helpers";
import { corpusFiles, corruptions, deliveries, structuralCorruptions, type CorpusFile } from "./corpus";
import { expectNothingStored, expectWellFormed, SEED, storedState } from "./fuzz";

/**
 * Every image and video fixture (and a few generated files), cut short, with bits flipped and
 * with bytes appended, seeded (FUZZ_SEED replays another seed): the strippers and header readers
 * refuse with a 422 or take the file, never anything else, and the upload route answers, never
 * with a 5xx, errors in the envelope, and stores nothing for a file it refuses.
 */

let files: CorpusFile[];

beforeAll(async () => {
  files = await corpusFiles();
});

type Stripped = { output: Uint8Array } | { refused: string };

/** A stripper's result for a file fed in these pieces, and the most it held between two of them. */
function strip(format: Format, pieces: Uint8Array[], what: string): { result: Stripped; maxHeld: number } | null {
  const stripper = stripperFor(format);
  if (!stripper) return null;
  const out: Uint8Array[] = [];
  let maxHeld = 0;
  try {
    for (const piece of pieces) {
      out.push(...stripper.push(piece));
      maxHeld = Math.max(maxHeld, stripper.heldBytes());
    }
    out.push(...stripper.end());
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 422) throw new Error(`${what}: ${error}`, { cause: error });
    return { result: { refused: error.message }, maxHeld };
  }
  return { result: { output: concatBytes(out) }, maxHeld };
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((v, i) => v === b[i]);

const sameResult = (a: Stripped, b: Stripped) =>
  "output" in a ? "output" in b && sameBytes(a.output, b.output) : "refused" in b && a.refused === b.refused;

describe("corrupt corpora, straight through the strippers and header readers", () => {
  it("refuse with a 422 or take the file, hold at most 64 KiB, and decide alike however the file arrives", () => {
    let variants = 0;
    for (const file of files) {
      for (const variant of [file, ...corruptions(file, SEED), ...structuralCorruptions(file, SEED)]) {
        variants++;
        const what = variant.name;
        const media = sniff(variant.bytes);
        if (!media) continue;
        if (media.type === "image") {
          for (const complete of [true, false]) {
            const header = readImageHeader(media.format, variant.bytes.subarray(0, 1024 * 1024), complete);
            expect(["width" in header, "need" in header, "invalid" in header].filter(Boolean), what).toHaveLength(1);
          }
        }
        const whole = strip(media.format, [variant.bytes], what);
        if (!whole) continue;
        expect(whole.maxHeld, what).toBeLessThanOrEqual(MAX_HELD_BYTES);
        for (const pieces of deliveries(variant.bytes, SEED ^ variants)) {
          const split = strip(media.format, pieces, what)!;
          expect(split.maxHeld, what).toBeLessThanOrEqual(MAX_HELD_BYTES);
          if (!sameResult(whole.result, split.result)) expect(split.result, `${what}, in ${pieces.length} pieces`).toEqual(whole.result);
        }
      }
    }
    expect(variants).toBeGreaterThan(5000);
  });
});

/**
 * Through the route: every file but near-duplicates, of which a seeded few go (PngSuite's valid
 * files; the eight orientation JPEGs, one picture with different EXIF orientations). All of them
 * go straight through the parsers above.
 */
function routeCorpus() {
  const rng = prng(SEED);
  const sample = (pattern: RegExp, count: number) => {
    const similar = files.filter((f) => pattern.test(f.name));
    return Array.from({ length: count }, () => similar[rng.int(similar.length)]!.name);
  };
  const nearDuplicates = [/^pngsuite\/[^x]/, /^orientation\//];
  const sampled = new Set([...sample(nearDuplicates[0]!, 4), ...sample(nearDuplicates[1]!, 2)]);
  return files.filter((f) => !nearDuplicates.some((pattern) => pattern.test(f.name)) || sampled.has(f.name));
}

/** Longest an upload of a corpus file may take to answer. */
const ANSWER_MS = 10_000;

/** Uploads a file with the media service unreachable (its jobs fail at once), waiting for those jobs. */
async function uploadCorrupt(account: TestAccount, file: CorpusFile) {
  const request = new Request(`${ORIGIN}/api`, { method: "POST", headers: { "X-API-Key": account.full }, body: uploadForm(file.bytes, { allow_duplicate: "1" }) });
  const started = startApp(request, { bindings: { MEDIA_SERVICE_URL: DEAD_SERVICE } });
  const answer = await answerWithin(
    ANSWER_MS,
    file.name,
    started.response.then(async (response) => ({ status: response.status, headers: response.headers, text: await response.text() })),
  );
  await started.settled();
  return answer;
}

/** Removes an accepted upload's files and rows, so that every request starts from the same state. */
async function removeUpload(uploadId: string) {
  const objects = await env.FILES.list({ prefix: `uploads/${uploadId}/` });
  if (objects.objects.length) await env.FILES.delete(objects.objects.map((o) => o.key));
  await env.DB.batch([
    env.DB.prepare("DELETE FROM media_jobs WHERE upload_id = ?").bind(uploadId),
    env.DB.prepare("DELETE FROM uploads WHERE id = ?").bind(uploadId),
  ]);
}

describe("corrupt corpora, through the upload route", () => {
  /** The route corpus in a few groups, each its own test (and time limit). */
  const GROUPS = 4;

  it.each(Array.from({ length: GROUPS }, (_, i) => i))("group %i: answers in time, never a 5xx, errors in the envelope, nothing stored when refused", async (group) => {
    const account = await newAccount();
    const corpus = routeCorpus().filter((_, i) => i % GROUPS === group);
    const before = await storedState();
    for (const file of corpus) {
      for (const variant of [file, ...corruptions(file, SEED)]) {
        const answer = await uploadCorrupt(account, variant);
        expectWellFormed(answer, variant.name);
        if (answer.status === 200) await removeUpload(JSON.parse(answer.text).data.id);
        await expectNothingStored(before, variant.name);
      }
    }
  });
});
