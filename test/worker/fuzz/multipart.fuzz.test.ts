import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../../../src/errors";
import { multipartBoundary, multipartEvents } from "../../../src/http/multipart";
import { fixture, newAccount, type TestAccount } from "../helpers";
import { checkProperty, expectNothingStored, expectWellFormed, send, storedState, url } from "./fuzz";
import {
  boundaryArb,
  contentTypeFor,
  contentTypeOf,
  encodeBody,
  hostileBodyArb,
  splitsArb,
  streamOf,
  validBodyArb,
  type BodySpec,
  type ExpectedPart,
} from "./multipart-model";

async function readAll(stream: ReadableStream<Uint8Array>, boundary: string): Promise<ExpectedPart[]> {
  const parts: (ExpectedPart & { chunks: Uint8Array[] })[] = [];
  for await (const event of multipartEvents(stream, boundary, { maxBytes: 10 * 1024 * 1024, tooLargeMessage: "big" })) {
    if (event.kind === "part")
      parts.push({
        name: event.name,
        filename: event.filename,
        contentType: event.contentType,
        data: new Uint8Array(),
        chunks: [],
      });
    else if (event.kind === "data") parts.at(-1)!.chunks.push(event.chunk.slice());
  }
  return parts.map(({ chunks, ...part }) => ({ ...part, data: new Uint8Array(chunks.flatMap((c) => [...c])) }));
}

describe("multipart fuzz: the reader", () => {
  it("reads back the boundary of any Content-Type naming one", async () => {
    await checkProperty(
      fc.property(boundaryArb, fc.nat(3), fc.boolean(), (boundary, style, quoted) => {
        expect(multipartBoundary(contentTypeFor(boundary, style, quoted))).toBe(boundary);
      }),
      500,
    );
  });

  it("finds exactly the parts and bytes of any well-formed body, however it is split", async () => {
    await checkProperty(
      fc.asyncProperty(validBodyArb, splitsArb, async ({ spec, expected }, sizes) => {
        expect(await readAll(streamOf(encodeBody(spec), sizes), spec.boundary)).toEqual(expected);
      }),
      300,
    );
  });

  it("reads a hostile body or refuses it with 413 or 422, never another error", async () => {
    await checkProperty(
      fc.asyncProperty(hostileBodyArb(["a", "b"], fc.string(), ["f"]), splitsArb, async (spec, sizes) => {
        const boundary = multipartBoundary(contentTypeOf(spec));
        if (!boundary) return;
        await readAll(streamOf(encodeBody(spec, new Uint8Array([1, 2, 3])), sizes), boundary).catch((error) => {
          expect(error).toBeInstanceOf(ApiError);
          expect([413, 422]).toContain(error.status);
        });
      }),
      300,
    );
  });
});

/** Values for the routes' fields: valid ones of every field, and anything else. */
const fieldValues = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      "public",
      "unlisted",
      "private",
      "1",
      "0",
      "true",
      "Yes",
      "off",
      "60",
      "3600",
      "31536000",
      "31536001",
      "",
      " ",
      "-1",
      "1e3",
    ),
    weight: 4,
  },
  { arbitrary: fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 32, maxLength: 32 }), weight: 1 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 100 }), weight: 2 },
  { arbitrary: fc.integer({ min: 60_000, max: 70_000 }).map((n) => "x".repeat(n)), weight: 1 },
);

const UPLOAD_FIELDS = [
  "title",
  "description",
  "visibility",
  "expires_in",
  "allow_duplicate",
  "keep_original",
  "max_views",
  "upload_id",
  "filename",
  "uploads",
];
const CHUNK_FIELDS = ["upload_id", "index", "total", "chunk"];

describe("multipart fuzz: the upload routes", () => {
  let account: TestAccount;
  let image: Uint8Array;
  beforeAll(async () => {
    account = await newAccount("multipart-fuzz");
    image = await fixture("tiny/png-transparent.png");
  });

  async function post(path: string, spec: BodySpec, sizes: number[]) {
    const before = await storedState();
    const answer = await send(
      new Request(url(path), {
        method: "POST",
        headers: { "X-API-Key": account.full, "Content-Type": contentTypeOf(spec) },
        body: streamOf(encodeBody(spec, image), sizes),
      }),
    );
    expectWellFormed(answer, `POST ${path}`);
    if (answer.status >= 400)
      await expectNothingStored(before, `refused POST ${path} (${answer.status} ${answer.text})`);
    return answer.status;
  }

  it("POST /api answers every body, never with a 5xx, and stores nothing when it refuses", async () => {
    const statuses: number[] = [];
    await checkProperty(
      fc.asyncProperty(
        hostileBodyArb(UPLOAD_FIELDS, fieldValues, ["uploads", "uploads[]"]),
        splitsArb,
        async (spec, sizes) => {
          statuses.push(await post("/api", spec, sizes));
        },
      ),
      100,
    );
    // The generator is not so hostile that nothing gets through (given runs enough to tell).
    if (statuses.length >= 50) expect(statuses).toContain(200);
  });

  it("POST /api/chunk answers every body, never with a 5xx, and stores nothing when it refuses", async () => {
    await checkProperty(
      fc.asyncProperty(hostileBodyArb(CHUNK_FIELDS, fieldValues, ["chunk"]), splitsArb, async (spec, sizes) => {
        await post("/api/chunk", spec, sizes);
      }),
      80,
    );
  });
});
