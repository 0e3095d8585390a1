import { describe, expect, it } from "vitest";
import { ApiError } from "../../../src/errors";
import { multipartBoundary } from "../../../src/http/multipart";
import { multipartParts, readTextPart } from "../../../src/http/multipart-parts";

const encoder = new TextEncoder();

/** Serialises a FormData the way a real client does, and returns the body bytes and boundary. */
async function encode(form: FormData) {
  const request = new Request("http://x/", { method: "POST", body: form });
  const boundary = multipartBoundary(request.headers.get("content-type") ?? undefined)!;
  return { bytes: new Uint8Array(await request.arrayBuffer()), boundary };
}

/** A stream that delivers `bytes` in pieces of `size`, to exercise boundaries split across reads. */
function streamOf(bytes: Uint8Array, size: number) {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

async function collect(bytes: Uint8Array, boundary: string, pieceSize: number, maxBytes = 1e9) {
  const out: { name: string; filename: string | null; data: Uint8Array }[] = [];
  for await (const part of multipartParts(streamOf(bytes, pieceSize), boundary, { maxBytes, tooLargeMessage: "big" })) {
    const chunks: number[] = [];
    for await (const c of part.body) chunks.push(...c);
    out.push({ name: part.name, filename: part.filename, data: new Uint8Array(chunks) });
  }
  return out;
}

describe("multipart reader", () => {
  const file = new Uint8Array(3000).map((_, i) => (i * 7) % 256);
  // Content that looks almost like a boundary must survive untouched.
  file.set(encoder.encode("\r\n--not-the-boundary\r\n"), 100);

  it.each([1, 2, 7, 64, 1000, 100_000])("reads fields and files delivered in pieces of %i bytes", async (size) => {
    const form = new FormData();
    form.append("title", "héllo wörld");
    form.append("uploads", new Blob([file]), "photo name.png");
    form.append("empty", "");
    const { bytes, boundary } = await encode(form);
    const parts = await collect(bytes, boundary, size);
    expect(parts.map((p) => p.name)).toEqual(["title", "uploads", "empty"]);
    expect(new TextDecoder().decode(parts[0]!.data)).toBe("héllo wörld");
    expect(parts[1]!.filename).toBe("photo name.png");
    expect(parts[1]!.data).toEqual(file);
    expect(parts[2]!.data.length).toBe(0);
  });

  it("skips a part body the consumer does not read", async () => {
    const form = new FormData();
    form.append("ignored", new Blob([file]), "x.bin");
    form.append("after", "value");
    const { bytes, boundary } = await encode(form);
    const names: string[] = [];
    let value = "";
    for await (const part of multipartParts(streamOf(bytes, 50), boundary, { maxBytes: 1e9, tooLargeMessage: "big" })) {
      names.push(part.name);
      if (part.name === "after") value = await readTextPart(part, 100, () => new Error("long"));
    }
    expect(names).toEqual(["ignored", "after"]);
    expect(value).toBe("value");
  });

  it("fails with 413 as soon as the streamed body passes the limit", async () => {
    const form = new FormData();
    form.append("uploads", new Blob([file]), "x.bin");
    const { bytes, boundary } = await encode(form);
    const error = await collect(bytes, boundary, 256, 1000).catch((e) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(413);
  });

  it.each([
    ["a truncated body", (b: Uint8Array) => b.slice(0, b.length - 30)],
    ["a body without any boundary", () => encoder.encode("just some text, no parts")],
    [
      "a part without headers end",
      (_: Uint8Array, boundary: string) => encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="a"`),
    ],
    [
      "a part without a name",
      (_: Uint8Array, boundary: string) =>
        encoder.encode(`--${boundary}\r\nContent-Type: text/plain\r\n\r\nx\r\n--${boundary}--\r\n`),
    ],
  ])("rejects %s with 422", async (_label, mangle) => {
    const form = new FormData();
    form.append("uploads", new Blob([file]), "x.bin");
    const { bytes, boundary } = await encode(form);
    const error = await collect(mangle(bytes, boundary), boundary, 100).catch((e) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(422);
  });

  it("reads quoted and escaped parameters of Content-Disposition", async () => {
    const body = encoder.encode(
      '--b\r\nContent-Disposition: form-data; name="uploads"; filename="a \\"quoted\\" name.png"\r\n\r\nxyz\r\n--b--\r\n',
    );
    const parts = await collect(body, "b", 3);
    expect(parts).toEqual([{ name: "uploads", filename: 'a "quoted" name.png', data: encoder.encode("xyz") }]);
  });

  it("never takes text inside a quoted parameter for a parameter of its own", async () => {
    const body = encoder.encode(
      '--b\r\nContent-Disposition: form-data; name="title; filename=\\"x.png\\""\r\n\r\nv\r\n' +
        '--b\r\nContent-Disposition: form-data; filename="name=\\"uploads\\""; name=caption\r\n\r\nw\r\n--b--\r\n',
    );
    const parts = await collect(body, "b", 7);
    expect(parts).toEqual([
      { name: 'title; filename="x.png"', filename: null, data: encoder.encode("v") },
      { name: "caption", filename: 'name="uploads"', data: encoder.encode("w") },
    ]);
  });

  it("reads the boundary from the Content-Type header", () => {
    expect(multipartBoundary("multipart/form-data; boundary=abc")).toBe("abc");
    expect(multipartBoundary('multipart/form-data; charset=utf-8; boundary="a b"')).toBe("a b");
    expect(multipartBoundary("application/json")).toBeNull();
    expect(multipartBoundary("multipart/form-data")).toBeNull();
    expect(multipartBoundary(undefined)).toBeNull();
  });
});
