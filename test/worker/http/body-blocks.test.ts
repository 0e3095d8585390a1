import { describe, expect, it } from "vitest";
import { bodyBlocks, readBlocks } from "../../../src/http/body-blocks";

async function readAll(body: ReadableStream<Uint8Array>) {
  const reader = readBlocks(body);
  const sizes: number[] = [];
  for (let block = await reader.read(); block; block = await reader.read()) sizes.push(block.byteLength);
  reader.releaseLock();
  return sizes;
}

/** A body the runtime hands over in small pieces, as it does a request's. */
function trickled(total: number, piece: number) {
  const { readable, writable } = new IdentityTransformStream();
  const writer = writable.getWriter();
  void (async () => {
    for (let at = 0; at < total; at += piece)
      await writer.write(new Uint8Array(Math.min(piece, total - at)).fill(at % 251));
    await writer.close();
  })();
  return readable as ReadableStream<Uint8Array>;
}

describe("readBlocks", () => {
  it("reads a byte stream in blocks of at least 64 KiB, whatever pieces it comes in", async () => {
    const sizes = await readAll(trickled(1024 * 1024 + 100, 4096));
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(1024 * 1024 + 100);
    expect(sizes.slice(0, -1).every((size) => size >= 64 * 1024)).toBe(true);
    expect(sizes.length).toBeLessThanOrEqual(17);
  });

  it("reads other streams as they come, and an empty body as nothing", async () => {
    const chunks = [new Uint8Array(3), new Uint8Array(5)];
    const plain = new ReadableStream<Uint8Array>({
      pull: (c) => (chunks.length ? c.enqueue(chunks.shift()!) : c.close()),
    });
    expect(await readAll(plain)).toEqual([3, 5]);
    expect(await readAll(new Response("").body!)).toEqual([]);
  });

  it("gives the blocks to a for await loop (none without a body); leaving it early cancels the body", async () => {
    const sizes: number[] = [];
    for await (const block of bodyBlocks(trickled(300 * 1024, 4096))) sizes.push(block.byteLength);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(300 * 1024);
    expect(sizes.slice(0, -1).every((size) => size >= 64 * 1024)).toBe(true);
    for await (const _ of bodyBlocks(null)) expect.unreachable();

    let cancelled: unknown = null;
    const endless = new ReadableStream<Uint8Array>({
      pull: (c) => c.enqueue(new Uint8Array(1000)),
      cancel: (reason) => {
        cancelled = reason ?? "cancelled";
      },
    });
    for await (const _ of bodyBlocks(endless)) break;
    expect(cancelled).not.toBeNull();
  });
});
