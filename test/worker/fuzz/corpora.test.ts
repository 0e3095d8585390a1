import { Buffer } from "node:buffer";
import { beforeAll, describe, expect, it } from "vitest";
import { concatBytes } from "../../../src/bytes";
import { ApiError } from "../../../src/errors";
import { readImageHeader } from "../../../src/media/image-header";
import { ACCEPTED_FORMATS_TEXT, sniff, type Format } from "../../../src/media/sniff";
import { stripperFor } from "../../../src/media/strip";
import { MAX_HELD_BYTES } from "../../../src/media/strip/stripper";
import { prng } from "../../support/build";
import { answerWithin, DEAD_SERVICE, newAccount, startApp, uploadForm, type TestAccount } from "../helpers";
import { afterCase, expectStanding, removeUpload } from "./canary";
import { corpusFiles, corruptions, deliveries, structuralCorruptions, type CorpusFile } from "./corpus";
import {
  expectNothingStored,
  expectWellFormed,
  perFile,
  runs,
  SEED,
  send,
  storedState,
  url,
  type StoredState,
} from "./fuzz";
import { structureMutations } from "./structure";

/**
 * Every image and video fixture (and a few generated and built files), cut short, with bits
 * flipped, with bytes appended, and damaged along its format's structure (structure/), seeded
 * (FUZZ_SEED replays another seed): the strippers and header readers refuse with a 422 or take
 * the file, never anything else, and the upload route answers, never with a 5xx, errors in the
 * envelope, stores nothing for a file it refuses, and leaves the Worker standing (canary.ts).
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

/** Byte for byte, by the runtime's own comparison rather than a loop in JavaScript: outputs are compared for every delivery. */
const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && Buffer.compare(a, b) === 0;

const sameResult = (a: Stripped, b: Stripped) =>
  "output" in a ? "output" in b && sameBytes(a.output, b.output) : "refused" in b && a.refused === b.refused;

/**
 * A file straight through the header reader (it gives a size, asks for more or refuses) and the
 * stripper, whole and in every delivery: the stripper holds at most 64 KiB and decides alike
 * however the file arrives. Its result whole; null where there is no stripper.
 */
function throughParsers(variant: CorpusFile, deliverySeed: number): Stripped | null {
  const what = variant.name;
  const media = sniff(variant.bytes);
  if (!media) return null;
  if (media.type === "image") {
    for (const complete of [true, false]) {
      const header = readImageHeader(media.format, variant.bytes.subarray(0, 1024 * 1024), complete);
      expect(["width" in header, "need" in header, "invalid" in header].filter(Boolean), what).toHaveLength(1);
    }
  }
  const whole = strip(media.format, [variant.bytes], what);
  if (!whole) return null;
  expect(whole.maxHeld, what).toBeLessThanOrEqual(MAX_HELD_BYTES);
  for (const pieces of deliveries(variant.bytes, deliverySeed)) {
    const split = strip(media.format, pieces, what)!;
    expect(split.maxHeld, what).toBeLessThanOrEqual(MAX_HELD_BYTES);
    if (!sameResult(whole.result, split.result))
      expect(split.result, `${what}, in ${pieces.length} pieces`).toEqual(whole.result);
  }
  return whole.result;
}

/** Structure-aware damaged copies of each file: straight through the parsers, and through the route for the files the service takes. */
const PARSER_MUTANTS = 24;
const ROUTE_MUTANTS = 8;
/**
 * The route takes every third of a file's plain corruptions (which third turns from file to
 * file), and every one in a longer campaign (FUZZ_RUNS over 100, `npm run bench -- fuzz`): the
 * parsers above take them all, and a route case costs an upload, its thumbnail and a check of all
 * that is stored.
 */
const ROUTE_STRIDE = runs(100) > 100 ? 1 : 3;

describe("corrupt corpora, straight through the strippers and header readers", () => {
  it("refuse with a 422 or take the file, hold at most 64 KiB, and decide alike however the file arrives", async () => {
    let variants = 0;
    for (const file of files) {
      for (const variant of [file, ...corruptions(file, SEED), ...structuralCorruptions(file, SEED)]) {
        variants++;
        throughParsers(variant, SEED ^ variants);
      }
    }
    expect(variants).toBeGreaterThan(5000);
    await expectStanding();
  });

  it("do the same for damage along each format's structure, and take what stays a valid file", async () => {
    let mutants = 0;
    for (const file of files) {
      const original = throughParsers(file, SEED);
      for (const mutant of structureMutations(file, SEED, perFile(PARSER_MUTANTS))) {
        mutants++;
        const result = throughParsers(mutant, SEED ^ mutants);
        if (mutant.valid && original && "output" in original) expect(result, mutant.name).toHaveProperty("output");
      }
    }
    expect(mutants).toBeGreaterThan(5000);
    await expectStanding();
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
  const body = uploadForm(file.bytes, { allow_duplicate: "1" });
  const app = { bindings: { MEDIA_SERVICE_URL: DEAD_SERVICE } };
  const started = startApp("/api", { method: "POST", key: account.full, body, app });
  const answer = await answerWithin(
    ANSWER_MS,
    file.name,
    started.response.then(async (response) => ({
      status: response.status,
      headers: response.headers,
      text: await response.text(),
    })),
  );
  await started.settled();
  return answer;
}

/** One case through the route: the pass conditions, the file removed if taken, and the isolate checked. */
async function routeCase(account: TestAccount, before: StoredState, file: CorpusFile): Promise<number> {
  const answer = await uploadCorrupt(account, file);
  expectWellFormed(answer, file.name);
  if (answer.status === 200) await removeUpload(JSON.parse(answer.text).data.id);
  await expectNothingStored(before, file.name);
  await afterCase(file.name);
  return answer.status;
}

describe("corrupt corpora, through the upload route", () => {
  /** The route corpus in a few groups, each its own test (and time limit). */
  const GROUPS = 4;

  it.each(Array.from({ length: GROUPS }, (_, i) => i))(
    "group %i: answers in time, never a 5xx, errors in the envelope, nothing stored when refused",
    async (group) => {
      const account = await newAccount();
      const corpus = routeCorpus().filter((_, i) => i % GROUPS === group);
      const before = await storedState();
      for (const [n, file] of corpus.entries()) {
        const taken = (await routeCase(account, before, file)) === 200;
        for (const [i, variant] of corruptions(file, SEED).entries())
          if ((i + n) % ROUTE_STRIDE === 0) await routeCase(account, before, variant);
        // A file already refused is decided at its first fault: only files the service takes are damaged further.
        if (!taken) continue;
        for (const mutant of structureMutations(file, SEED, perFile(ROUTE_MUTANTS))) {
          const status = await routeCase(account, before, mutant);
          if (mutant.valid) expect(status, `${mutant.name}: still a valid file`).toBe(200);
        }
      }
      await expectStanding();
    },
  );
});

const UNSUPPORTED = `Unsupported file type. Accepted: ${ACCEPTED_FORMATS_TEXT}.`;
const refused = (errors: string) => ({ status: 422, errors }) as const;
const taken = (width: number, height: number) => ({ status: 200, size: [width, height] }) as const;

/**
 * Real broken files from public corpora (test/fixtures/corrupt, from exif-samples, and
 * PngSuite's x*.png; sources in test/fixtures/README.md), each with the answer the service gives
 * it, so that any change in what it takes or why it refuses shows.
 */
const REAL_CORRUPT: Record<string, ReturnType<typeof refused> | ReturnType<typeof taken>> = {
  // Its EXIF segment says it ends at 16 KiB, inside the preview image it carries: the preview's
  // markers pass for the image's own, until its scan data runs into a marker no JPEG has (0xFF9F).
  "corrupt/corrupted.jpg": refused("Unreadable image data (jpg): broken marker structure."),
  // No EXIF at all (the metadata is an XMP packet, which goes): sound JPEGs, taken as they are.
  "corrupt/invalid-image00971.jpg": taken(636, 227),
  "corrupt/invalid-image01088.jpg": taken(425, 120),
  "corrupt/invalid-image01137.jpg": taken(88, 64),
  "corrupt/invalid-image01551.jpg": taken(61, 58),
  "corrupt/invalid-image01713.jpg": taken(49, 500),
  "corrupt/invalid-image01980.jpg": taken(284, 25),
  "pngsuite/xc1n0g08.png": refused("Unreadable image data (png): invalid colour type 1 with bit depth 8."),
  "pngsuite/xc9n2c08.png": refused("Unreadable image data (png): invalid colour type 9 with bit depth 8."),
  "pngsuite/xcsn0g01.png": refused("Unreadable image data (png): checksum mismatch in IDAT."),
  "pngsuite/xd0n2c08.png": refused("Unreadable image data (png): invalid colour type 2 with bit depth 0."),
  "pngsuite/xd3n2c08.png": refused("Unreadable image data (png): invalid colour type 2 with bit depth 3."),
  "pngsuite/xd9n2c08.png": refused("Unreadable image data (png): invalid colour type 2 with bit depth 99."),
  "pngsuite/xdtn0g01.png": refused("Unreadable image data (png): no image data."),
  "pngsuite/xhdn0g08.png": refused("Unreadable image data (png): checksum mismatch in IHDR."),
  // Signatures broken (carriage returns or line feeds added, as a text-mode transfer would, or a
  // byte changed): not PNGs at all.
  "pngsuite/xcrn0g04.png": refused(UNSUPPORTED),
  "pngsuite/xlfn0g04.png": refused(UNSUPPORTED),
  "pngsuite/xs1n0g01.png": refused(UNSUPPORTED),
  "pngsuite/xs2n0g01.png": refused(UNSUPPORTED),
  "pngsuite/xs4n0g01.png": refused(UNSUPPORTED),
  "pngsuite/xs7n0g01.png": refused(UNSUPPORTED),
};

describe("real corrupt files", () => {
  it("each gets its own answer (a 422 with its reason, or a 200 as it is), and the Worker stands after each", async () => {
    const corrupt = files.filter((f) => f.name.startsWith("corrupt/") || f.name.startsWith("pngsuite/x"));
    expect(corrupt.map((f) => f.name).sort()).toEqual(Object.keys(REAL_CORRUPT).sort());
    const account = await newAccount();
    const before = await storedState();
    for (const { name, bytes } of corrupt) {
      // With the media service up: the work an accepted file leaves (thumbnails) runs too.
      const answer = await send(
        new Request(url("/api"), {
          method: "POST",
          headers: { "X-API-Key": account.full },
          body: uploadForm(bytes, { allow_duplicate: "1" }),
        }),
      );
      expectWellFormed(answer, name);
      const expected = REAL_CORRUPT[name]!;
      if (expected.status === 422) {
        expect({ status: answer.status, errors: JSON.parse(answer.text).errors }, name).toEqual(expected);
      } else {
        expect(answer.status, `${name}: ${answer.text.slice(0, 300)}`).toBe(200);
        const upload = JSON.parse(answer.text).data;
        expect({ status: 200, size: [upload.width, upload.height] }, name).toEqual(expected);
        await removeUpload(upload.id);
      }
      await expectNothingStored(before, name);
      await expectStanding();
    }
  });
});
