// The least a Worker can do to serve a file from R2 or to store an uploaded one, so the benchmark
// can tell how much of a src GET's or an upload's cost is the service's own work (routing, D1,
// rate limits, sniffing, metadata removal) rather than the runtime.
//   POST /u      a multipart/form-data upload: its `uploads` file put into R2 under a random key
//   POST /uf     the same, plus the storage work any upload of an image with a thumbnail and a
//                metadata row must do, and nothing else: three D1 round trips (a key lookup, a
//                batch of checks, the row) and a second, 1 KiB, R2 put (the thumbnail). A floor
//                for the service's upload, not a Worker anyone would ship.
//   PUT /o/:key  stores the request body (benchmark setup)
//   PUT /m/:key  stores the request body as an R2 multipart upload of 8 MiB parts, each held until
//                full: what any Worker must do with a body whose length it does not know
//   PUT /p/:key/:part[?upload=ID]  stores the body as part `part` of a multipart upload of
//                key, begun by the first such request (no upload): a file sent in pieces, the
//                least a Worker can do with each
//   POST /p/:key?upload=ID  completes that upload with the parts listed in the JSON body
//   GET /o/:key  streams the object back
//   GET /        readiness check

interface Env {
  FILES: R2Bucket;
  DB: D1Database;
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (pathname === "/") return new Response("ok");
    if (pathname === "/u" && request.method === "POST") return putUploadedFile(env.FILES, request);
    if (pathname === "/uf" && request.method === "POST") return uploadFloor(env, request);
    const piece = /^\/p\/([^/]+)(?:\/(\d+))?$/.exec(pathname);
    if (piece) return storePiece(env.FILES, request, piece[1]!, piece[2]);
    const parts = /^\/m\/(.+)$/.exec(pathname)?.[1];
    if (parts && request.method === "PUT" && request.body) return putInParts(env.FILES, parts, request.body);
    const key = /^\/o\/(.+)$/.exec(pathname)?.[1];
    if (!key) return new Response("Not found", { status: 404 });

    if (request.method === "PUT") {
      const contentType = request.headers.get("Content-Type") ?? "application/octet-stream";
      const stored = await env.FILES.put(key, request.body, { httpMetadata: { contentType } });
      return Response.json({ key, size: stored.size, etag: stored.httpEtag }, { status: 201 });
    }
    if (request.method === "GET") {
      const object = await env.FILES.get(key);
      if (!object) return new Response("Not found", { status: 404 });
      return new Response(object.body, {
        headers: {
          "Content-Type": object.httpMetadata?.contentType ?? "application/octet-stream",
          "Content-Length": String(object.size),
          ETag: object.httpEtag,
        },
      });
    }
    return new Response("Method not allowed", { status: 405, headers: { Allow: "GET, PUT" } });
  },
} satisfies ExportedHandler<Env>;

/** The runtime's own form parser, which holds the whole body in memory: fine for a baseline of small files. */
async function putUploadedFile(bucket: R2Bucket, request: Request): Promise<Response> {
  const file = (await request.formData()).get("uploads");
  if (!(file instanceof File)) return new Response("No file", { status: 422 });
  const key = crypto.randomUUID();
  const stored = await bucket.put(key, await file.arrayBuffer(), { httpMetadata: { contentType: file.type } });
  return Response.json({ key, size: stored.size }, { status: 200 });
}

const PART_BYTES = 8 * 1024 * 1024;

async function putInParts(bucket: R2Bucket, key: string, body: ReadableStream<Uint8Array>): Promise<Response> {
  const upload = await bucket.createMultipartUpload(key);
  const uploaded: R2UploadedPart[] = [];
  let part = new Uint8Array(PART_BYTES);
  let filled = 0;
  const flush = async () => {
    uploaded.push(await upload.uploadPart(uploaded.length + 1, part.subarray(0, filled)));
    part = new Uint8Array(PART_BYTES);
    filled = 0;
  };
  for await (const chunk of body) {
    for (let at = 0; at < chunk.byteLength; ) {
      const n = Math.min(PART_BYTES - filled, chunk.byteLength - at);
      part.set(chunk.subarray(at, at + n), filled);
      filled += n;
      at += n;
      if (filled === PART_BYTES) await flush();
    }
  }
  if (filled > 0 || uploaded.length === 0) await flush();
  const stored = await upload.complete(uploaded);
  return Response.json({ key, size: stored.size, etag: stored.httpEtag }, { status: 201 });
}

async function storePiece(
  bucket: R2Bucket,
  request: Request,
  key: string,
  part: string | undefined,
): Promise<Response> {
  const uploadId = new URL(request.url).searchParams.get("upload");
  if (request.method === "PUT" && part) {
    const upload = uploadId ? bucket.resumeMultipartUpload(key, uploadId) : await bucket.createMultipartUpload(key);
    const uploaded = await upload.uploadPart(Number(part), await request.arrayBuffer());
    return Response.json({ upload: upload.uploadId, part: uploaded });
  }
  if (request.method === "POST" && uploadId && !part) {
    const stored = await bucket.resumeMultipartUpload(key, uploadId).complete(await request.json<R2UploadedPart[]>());
    return Response.json({ key, size: stored.size, etag: stored.httpEtag }, { status: 201 });
  }
  return new Response("Method not allowed", { status: 405 });
}

let tableMade: Promise<unknown> | null = null;
const THUMBNAIL = new Uint8Array(1024);

async function uploadFloor(env: Env, request: Request): Promise<Response> {
  // Time waiting on D1 and R2, for the scale suite's breakdown (the runtime's clock moves only across I/O).
  const waited = { d1: 0, r2: 0 };
  const timed = async <T>(store: "d1" | "r2", call: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    try {
      return await call();
    } finally {
      waited[store] += Date.now() - started;
    }
  };
  tableMade ??= env.DB.exec(
    "CREATE TABLE IF NOT EXISTS uploads (id TEXT PRIMARY KEY, key TEXT NOT NULL, size INTEGER NOT NULL)",
  );
  await tableMade;
  const key = request.headers.get("X-API-Key") ?? "";
  await timed("d1", () => env.DB.prepare("SELECT ?1 AS key").bind(key).first());
  const file = (await request.formData()).get("uploads");
  if (!(file instanceof File)) return new Response("No file", { status: 422 });
  const id = crypto.randomUUID();
  const bytes = await file.arrayBuffer();
  const stored = await timed("r2", () => env.FILES.put(id, bytes, { httpMetadata: { contentType: file.type } }));
  await timed("d1", () =>
    env.DB.batch([env.DB.prepare("SELECT ?1 AS flagged").bind(id), env.DB.prepare("SELECT ?1 AS duplicate").bind(id)]),
  );
  await timed("r2", () => env.FILES.put(`${id}.thumb`, THUMBNAIL, { httpMetadata: { contentType: "image/webp" } }));
  await timed("d1", () =>
    env.DB.prepare("INSERT INTO uploads (id, key, size) VALUES (?1, ?2, ?3)").bind(id, id, stored.size).run(),
  );
  return Response.json(
    { id, size: stored.size },
    { status: 200, headers: { "Server-Timing": `d1;dur=${waited.d1}, r2;dur=${waited.r2}` } },
  );
}
