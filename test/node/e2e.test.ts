import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { YourImageShare, YourImageShareError } from "yourimageshare";
import { ihdr, pngChunk, pngFile } from "../support/build";
import { createAccount, fixture, sharedTestServer, uploadFile, type TestServer } from "./server";

const PIECE = 5 * 1024 * 1024;

// A PNG without metadata, so no conversion or stripping applies and the stored bytes are the sent bytes.
const IMAGE = "pngsuite/basn2c08.png";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

async function expectErrorEnvelope(res: Response, status: number) {
  expect(res.status).toBe(status);
  expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
  const body = (await res.json()) as { type: string; errors: unknown };
  expect(body.type).toBe("error");
  expect(typeof body.errors).toBe("string");
}

/** Runs `call` and returns the YourImageShareError it must throw. */
async function clientError(call: () => Promise<unknown>): Promise<YourImageShareError> {
  const error = await call().then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(YourImageShareError);
  return error as YourImageShareError;
}

let server: TestServer;
let image: Uint8Array;

beforeAll(async () => {
  image = await fixture(IMAGE);
  server = await sharedTestServer();
});

afterAll(async () => {
  await server?.stop();
});

describe("the published npm client against the service", () => {
  let full: YourImageShare;
  let uploadOnly: YourImageShare;

  beforeAll(async () => {
    const account = await createAccount(server, "npm client");
    full = new YourImageShare({ apiKey: account.full, baseUrl: server.api });
    uploadOnly = new YourImageShare({ apiKey: account.upload, baseUrl: server.api });
  });

  it("uploads, lists and deletes", async () => {
    const upload = await full.upload(new Blob([image], { type: "image/png" }), { filename: "photo.png" });
    expect(upload.type).toBe("image");
    expect(upload.expires_at).toBeNull();
    expect(upload.src.startsWith(`${server.url}/`)).toBe(true);
    expect(upload.direct.startsWith(`${server.url}/`)).toBe(true);

    const listed = await full.list();
    expect(listed.data.map((u) => u.id)).toEqual([upload.id]);
    expect(listed.data[0]?.src).toBe(upload.src);
    expect(listed.meta).toEqual({ current_page: 1, last_page: 1, total: 1, next_cursor: null });

    await full.delete(upload.id);
    const after = await full.list();
    expect(after.data).toEqual([]);
    expect(after.meta.total).toBe(0);

    expect((await clientError(() => full.delete(upload.id))).status).toBe(404);
  });

  it("uploads with the upload-only key, which cannot list", async () => {
    const before = Date.now();
    const upload = await uploadOnly.upload(image, { filename: "photo.png", expiresIn: 3600 });
    expect(upload.type).toBe("image");
    const expiresAt = Date.parse(upload.expires_at ?? "");
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3_599_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3_601_000);

    expect((await clientError(() => uploadOnly.list())).status).toBe(401);
    expect((await clientError(() => uploadOnly.delete(upload.id))).status).toBe(401);

    // The upload belongs to the same account: the full key sees it and may delete it.
    expect((await full.list()).data.map((u) => u.id)).toEqual([upload.id]);
    await full.delete(upload.id);
  });
});

describe("files, pages and links over HTTP", () => {
  let key: string;
  let upload: { id: string; src: string; direct: string; delete_url: string };

  beforeAll(async () => {
    key = (await createAccount(server, "http")).full;
    const res = await uploadFile(server, key, image, "photo.png");
    expect(res.status).toBe(200);
    upload = ((await res.json()) as { data: typeof upload }).data;
    expect(upload.delete_url).toBeTypeOf("string");
  });

  it("serves the same bytes at src, with type, ETag and ranges", async () => {
    const res = await fetch(upload.src);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("image/png");
    const etag = res.headers.get("ETag");
    expect(etag).toMatch(/^(W\/)?"[^"]+"$/);
    expect(sha256(new Uint8Array(await res.arrayBuffer()))).toBe(sha256(image));

    const cached = await fetch(upload.src, { headers: { "If-None-Match": etag! } });
    expect(cached.status).toBe(304);

    const part = await fetch(upload.src, { headers: { Range: "bytes=0-9" } });
    expect(part.status).toBe(206);
    expect(part.headers.get("Content-Range")).toBe(`bytes 0-9/${image.length}`);
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(image.subarray(0, 10));
  });

  it("serves the upload's page as HTML", async () => {
    const res = await fetch(upload.direct);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(await res.text()).toContain(upload.src);
  });

  it("accepts the key as a query parameter, the header winning over it", async () => {
    const byQuery = await fetch(`${server.api}/${upload.id}?key=${encodeURIComponent(key)}`);
    expect(byQuery.status).toBe(200);
    expect(((await byQuery.json()) as { data: { id: string } }).data.id).toBe(upload.id);

    const badHeader = await fetch(`${server.api}/${upload.id}?key=${encodeURIComponent(key)}`, {
      headers: { "X-API-Key": "not-a-key" },
    });
    await expectErrorEnvelope(badHeader, 401);
  });

  it("answers unknown routes with the error envelope", async () => {
    await expectErrorEnvelope(await fetch(`${server.url}/no/such/route`), 404);
  });

  it("deletes through delete_url: GET asks, POST deletes", async () => {
    const confirm = await fetch(upload.delete_url);
    expect(confirm.status).toBe(200);
    expect(confirm.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(await confirm.text()).toMatch(/<form[^>]*method="post"/i);
    expect((await fetch(upload.src)).status).toBe(200);

    const deleted = await fetch(upload.delete_url, { method: "POST" });
    expect(deleted.status).toBe(200);

    await expectErrorEnvelope(await fetch(upload.src), 404);
    await expectErrorEnvelope(await fetch(`${server.api}/${upload.id}`, { headers: { "X-API-Key": key } }), 404);
  });
});

describe("a large file in pieces over HTTP", () => {
  // Each piece is its own request to the runtime: a finish must never wait on work an earlier
  // piece's request left behind (the pieces are read as they arrive, src/uploads/intake/piece-scan.ts).
  it("sends 5 MiB pieces one after the other and finishes, the file whole and hashed", async () => {
    const key = (await createAccount(server, "pieces")).full;
    const data = new Uint8Array(2 * PIECE + 50_000).map((_, i) => (i * 2654435761) >>> 24);
    const png = pngFile(ihdr(1, 1), pngChunk("IDAT", data));
    const uploadId = randomBytes(16).toString("hex");
    const post = (path: string, fields: Record<string, string>, piece?: Uint8Array) => {
      const form = new FormData();
      for (const [name, value] of Object.entries(fields)) form.append(name, value);
      if (piece) form.append("chunk", new Blob([piece]), "blob");
      return fetch(`${server.api}${path}`, {
        method: "POST",
        headers: { "X-API-Key": key },
        body: form,
        signal: AbortSignal.timeout(30_000),
      });
    };
    const total = Math.ceil(png.length / PIECE);
    for (let index = 0; index < total; index++) {
      const res = await post(
        "/chunk",
        { upload_id: uploadId, index: String(index), total: String(total) },
        png.subarray(index * PIECE, (index + 1) * PIECE),
      );
      expect(res.status, await res.clone().text()).toBe(200);
    }
    const done = await post("", { upload_id: uploadId, filename: "large.png", keep_original: "1" });
    expect(done.status).toBe(200);
    const { data: upload } = (await done.json()) as { data: { id: string; src: string } };
    expect(sha256(new Uint8Array(await (await fetch(upload.src)).arrayBuffer()))).toBe(sha256(png));

    // The same bytes sent whole are the same file: the hash taken piece by piece is the file's.
    const again = await uploadFile(server, key, png, "again.png", { keep_original: "1" });
    expect(((await again.json()) as { data: { id: string; duplicate: boolean } }).data).toMatchObject({
      id: upload.id,
      duplicate: true,
    });
  });
});
