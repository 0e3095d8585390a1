import { beforeAll, describe, expect, it } from "vitest";
import { processedUpload, useMediaTestBed } from "./server";
import {
  type Finished,
  keptAsSent,
  MiB,
  noisePng,
  type SentRequest,
  startUpload,
  storedFile,
  writes,
} from "./tus-client";

/**
 * /api/tus against tus-js-client 4.3.1, unchanged, from Node, on wrangler dev: every way it sends
 * a file (its bytes in the creation request or not, in requests of several sizes or whole,
 * aborted and resumed by a new client). Each time the stored file is the one sent, byte for byte,
 * and it gets its thumbnail. The raw protocol is tested in test/worker/routes/tus.test.ts; Uppy in
 * tus-uppy.test.ts; a Worker killed mid-upload in tus-kill.test.ts.
 */

const bed = useMediaTestBed("tus-clients");

/** 2048x2560 random pixels: 15 MiB (three 5 MiB pieces), made once. Its thumbnail is made by the media service. */
let file: Buffer;
beforeAll(() => {
  file = noisePng(2048, 2560);
});

const TUS = { "Tus-Resumable": "1.0.0" };

const clientOptions = (filename: string) => ({
  endpoint: `${bed.server.api}/tus`,
  headers: { "X-API-Key": bed.account.upload },
  metadata: keptAsSent(filename),
  // tus-js-client's retries of a 423 (another writer), a 409 or a 5xx.
  retryDelays: [0, 250, 500, 1000, 2000, 4000],
});

/** The stored file is the one sent, the tus URL answers with its upload, and it is processed. */
async function expectKeptAndProcessed(done: Finished) {
  expect(done.url).toMatch(new RegExp(`^${bed.server.api}/tus/[0-9a-f]{32}$`));
  const stored = await storedFile(done.src);
  expect(stored.length).toBe(file.length);
  expect(stored.equals(file), "the stored file differs from the one sent").toBe(true);
  const result = await fetch(done.url, { headers: { ...TUS, "X-API-Key": bed.account.upload } });
  expect(result.status).toBe(200);
  const { data } = (await result.json()) as { data: { id: string; src: string; size: number } };
  expect(data).toMatchObject({ id: done.id, src: done.src, size: file.length });
  const processed = await processedUpload<{ thumb: string | null; width: number }>(
    bed.server,
    bed.account.full,
    done.id,
  );
  expect(processed.width).toBe(2048);
}

/** Where each request carrying bytes started: null for the creation request's. */
const writeOffsets = (requests: SentRequest[]) => writes(requests).map((r) => r.offset);

describe("tus-js-client 4.3.1 from Node", () => {
  describe.each([
    ["off", false],
    ["on", true],
  ])("uploadDataDuringCreation %s", (_, uploadDataDuringCreation) => {
    it.each([
      ["1 MiB", 1 * MiB],
      ["3 MiB", 3 * MiB],
      ["7 MiB", 7 * MiB],
      ["the whole file", undefined],
    ])("sends 15 MiB in requests of %s", async (_, chunkSize) => {
      const run = startUpload(file, {
        ...clientOptions(`udc-${uploadDataDuringCreation}-${chunkSize ?? "whole"}.png`),
        uploadDataDuringCreation,
        ...(chunkSize ? { chunkSize } : {}),
      });
      const done = await run.done;
      // One request per piece of the file, each where the last one ended, and no retry.
      const step = chunkSize ?? file.length;
      const starts = Array.from({ length: Math.ceil(file.length / step) }, (_, i) => i * step);
      expect(writeOffsets(run.requests)).toEqual(uploadDataDuringCreation ? [null, ...starts.slice(1)] : starts);
      expect(run.requests.map((r) => r.status).filter((s) => s !== 201 && s !== 204)).toEqual([]);
      await expectKeptAndProcessed(done);
    });
  });

  it("is refused (413) a file over 100 MB sent in one request, as Cloudflare's edge refuses it deployed", async () => {
    // wrangler dev takes any body; the Worker refuses a declared body over EDGE_MAX_BODY_BYTES as the edge would.
    const big = Buffer.alloc(150 * 1000 * 1000);
    const run = startUpload(big, { ...clientOptions("too-big.bin"), retryDelays: [] });
    const error = await run.done.then(
      () => null,
      (failure: unknown) => failure as { originalResponse?: { getStatus(): number; getBody(): string } },
    );
    expect(error?.originalResponse?.getStatus()).toBe(413);
    expect(error?.originalResponse?.getBody()).toMatch(/100 MB/);
    expect(writes(run.requests).map((r) => r.status)).toEqual([413]);
  });

  it("resumes with a new tus.Upload from the offset the server gives, after the upload was aborted", async () => {
    const options = clientOptions("resumed.png");
    let aborted!: () => void;
    const abortedNow = new Promise<void>((resolve) => (aborted = resolve));
    // Requests of 4 MiB, aborted as the third one (bytes 8 to 12 MiB) is being sent.
    const first = startUpload(file, {
      ...options,
      chunkSize: 4 * MiB,
      onProgress(sent) {
        if (sent <= 8 * MiB) return;
        void first.upload.abort().then(aborted);
      },
    });
    await abortedNow;
    const url = first.upload.url!;
    expect(url).toBeTruthy();
    const second = startUpload(file, { ...options, uploadUrl: url });
    const done = await second.done;
    expect(done.url).toBe(url);
    // The new client asked where to go on from (HEAD), and sent the rest from there.
    const [head, ...rest] = second.requests;
    expect(head).toMatchObject({ method: "HEAD", status: 200 });
    const resumedAt = head!.answeredOffset!;
    expect(resumedAt).toBeGreaterThanOrEqual(8 * MiB);
    expect(resumedAt).toBeLessThanOrEqual(12 * MiB);
    expect(rest.map((r) => r.method)).not.toContain("POST");
    expect(writeOffsets(second.requests)[0]).toBe(resumedAt);
    await expectKeptAndProcessed(done);
  });
});
