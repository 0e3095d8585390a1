import { describe, expect, it } from "vitest";
import { concatBytes } from "../../../src/bytes";
import { MiB } from "../../../src/model/spec-limits";
import { ApiError } from "../../../src/errors";
import { multipartBoundary, multipartEvents } from "../../../src/http/multipart";
import { json, newAccount, request, strayObjects, uniquePng } from "../helpers";

/**
 * Hostile multipart bodies: whatever their shape, the reader must hold no more than a small
 * fixed amount of them and refuse them as soon as it can tell, not after reading them whole.
 */

const encoder = new TextEncoder();
const concat = (...parts: Uint8Array[]) => concatBytes(parts);
const HOLD_BOUND = 64 * 1024;

/** `head`, then `fillerBytes` of `filler`, then `tail`, delivered in pieces of `pieceSize`; counts what was read. */
function countedStream(head: string, filler: number, fillerBytes: number, tail: Uint8Array, pieceSize = 16 * 1024) {
  const total = head.length + fillerBytes + tail.length;
  const piece = new Uint8Array(pieceSize).fill(filler);
  const counter = { read: 0 };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const at = counter.read;
      if (at >= total) return controller.close();
      let chunk: Uint8Array;
      if (at === 0) chunk = encoder.encode(head);
      else if (at < head.length + fillerBytes)
        chunk = piece.slice(0, Math.min(pieceSize, head.length + fillerBytes - at));
      else chunk = tail;
      counter.read += chunk.length;
      controller.enqueue(chunk);
    },
  });
  return { stream, counter };
}

async function drain(stream: ReadableStream<Uint8Array>, boundary: string, maxBytes = 200 * MiB) {
  const names: string[] = [];
  for await (const event of multipartEvents(stream, boundary, { maxBytes, tooLargeMessage: "big" })) {
    if (event.kind === "part") names.push(event.name);
  }
  return names;
}

const PART = encoder.encode('Content-Disposition: form-data; name="title"\r\n\r\nhello\r\n--b--\r\n');

describe("multipart reader: bounded hold", () => {
  it("accepts a little transport padding after a boundary", async () => {
    const { stream } = countedStream("--b", 32, 40, concat(encoder.encode("\t\r\n"), PART));
    expect(await drain(stream, "b")).toEqual(["title"]);
  });

  it("refuses megabytes of padding after a boundary with 422, having read only a bounded amount", async () => {
    const { stream, counter } = countedStream("--b", 32, 2 * MiB, concat(encoder.encode("\r\n"), PART));
    const error = await drain(stream, "b").catch((e) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(422);
    expect(error.message).toMatch(/^Malformed multipart/);
    expect(counter.read).toBeLessThan(HOLD_BOUND);
  });

  it("refuses endless part headers having read only a bounded amount", async () => {
    const { stream, counter } = countedStream(
      '--b\r\nContent-Disposition: form-data; name="a"; x="',
      120,
      10 * MiB,
      PART,
      1000,
    );
    const error = await drain(stream, "b").catch((e) => e);
    expect(error.status).toBe(422);
    expect(counter.read).toBeLessThan(HOLD_BOUND);
  });

  it("refuses a header block over the limit even when it arrives in one piece", async () => {
    const body = encoder.encode(
      `--b\r\nContent-Disposition: form-data; name="a"\r\nX-Long: ${"x".repeat(100_000)}\r\n\r\nv\r\n--b--\r\n`,
    );
    const onePiece = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(body);
        controller.close();
      },
    });
    const error = await drain(onePiece, "b").catch((e) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(422);
  });

  it("takes a boundary of at most 70 characters, as RFC 2046 says", () => {
    expect(multipartBoundary(`multipart/form-data; boundary=${"a".repeat(70)}`)).toBe("a".repeat(70));
    expect(multipartBoundary(`multipart/form-data; boundary=${"a".repeat(71)}`)).toBeNull();
    expect(multipartBoundary(`multipart/form-data; boundary="${"a".repeat(71)}"`)).toBeNull();
    expect(multipartBoundary('multipart/form-data; boundary=""')).toBeNull();
  });
});

/** Objects that belong to no upload (see routes/upload.test.ts). */
describe("POST /api: hostile multipart framing", () => {
  it("refuses 2 MiB of padding after the first boundary quickly with 422, storing nothing", async () => {
    const account = await newAccount();
    const file = concat(
      encoder.encode(
        '\r\nContent-Disposition: form-data; name="uploads"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n',
      ),
      await uniquePng("padding"),
      encoder.encode("\r\n--b--\r\n"),
    );
    const { stream, counter } = countedStream("--b", 32, 2 * MiB, file);
    const started = Date.now();
    const res = await json(
      request("/api", {
        method: "POST",
        headers: { "X-API-Key": account.full, "Content-Type": "multipart/form-data; boundary=b" },
        body: stream,
      }),
    );
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ type: "error", errors: expect.stringMatching(/^Malformed multipart/) });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(counter.read).toBeLessThan(2 * MiB);
    expect(await strayObjects()).toEqual([]);
  });

  it("refuses text fields that together pass 64 KiB, even though each is within its limit", async () => {
    const account = await newAccount();
    const form = new FormData();
    for (let i = 0; i < 20; i++) form.append(`field${i}`, "x".repeat(60 * 1024));
    form.append("uploads", new Blob([await uniquePng("many-fields")]), "a.png");
    const res = await json(request("/api", { method: "POST", headers: { "X-API-Key": account.full }, body: form }));
    expect(res.status).toBe(422);
    expect(res.body.type).toBe("error");
    expect(await strayObjects()).toEqual([]);
  });
});
