import type { Context } from "hono";
import { ApiError } from "../errors";

interface ServedObject {
  key: string;
  /** What the object is, when known without asking storage (a thumbnail's is not recorded). */
  stored?: { size: number; etag: string };
  mime: string;
  cacheControl: string;
  filename: string;
  /** Extra response headers (robots, ...). */
  headers?: Record<string, string>;
  /**
   * Called just before bytes of the object are sent (a GET answered 200 or 206, not HEAD, 304
   * or 416); `fromStart` when they begin at its first byte. It may refuse by throwing.
   */
  beforeBody?: (sent: { fromStart: boolean }) => Promise<void>;
}

type ByteRange = { offset: number; length: number };

/**
 * Parses a single `bytes=` range against the object's size. Returns null when the header
 * should be ignored (absent, malformed, or several ranges, which we answer with the whole file,
 * as RFC 9110 allows) and "unsatisfiable" for a well-formed range outside the file.
 */
export function parseRange(header: string | undefined, size: number): ByteRange | null | "unsatisfiable" {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    const length = Math.min(suffix, size);
    return { offset: size - length, length };
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== "" && Number(m[2]) < start) return null;
  if (start >= size) return "unsatisfiable";
  return { offset: start, length: end - start + 1 };
}

function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === "*") return true;
  const bare = (t: string) => t.trim().replace(/^W\//, "");
  return header.split(",").some((t) => bare(t) === bare(etag));
}

/**
 * Streams an R2 object with conditional (ETag / If-None-Match) and range support. The body
 * is R2's stream passed straight through: nothing is buffered.
 *
 * Every answer, HEAD and 304 included, rests on one storage call that found the object: a
 * caller serving from remembered facts learns that they are out of date (its object was
 * removed) from the null this returns, before anything is sent.
 */
export async function serveObject(c: Context, object: ServedObject): Promise<Response | null> {
  const bucket: R2Bucket = c.env.FILES;
  const plainGet = c.req.method === "GET" && !c.req.header("Range") && !c.req.header("If-None-Match");
  if (!object.stored && plainGet) {
    await object.beforeBody?.({ fromStart: true });
    const body = await bucket.get(object.key);
    if (!body) return null;
    const headers = responseHeaders(object, body.httpEtag);
    headers.set("Content-Length", String(body.size));
    return new Response(body.body, { status: 200, headers });
  }
  let stored = object.stored;
  let found = false;
  const confirm = async () => {
    if (found) return true;
    const head = await bucket.head(object.key);
    stored ??= head ? { size: head.size, etag: head.httpEtag } : undefined;
    found = head !== null;
    return found;
  };
  if (!stored && !(await confirm())) return null;
  const { size, etag } = stored!;

  const headers = responseHeaders(object, etag);
  if (etagMatches(c.req.header("If-None-Match"), etag))
    return (await confirm()) ? new Response(null, { status: 304, headers }) : null;

  const ifRange = c.req.header("If-Range");
  const range = ifRange && ifRange !== etag ? null : parseRange(c.req.header("Range"), size);
  if (range === "unsatisfiable") {
    if (!(await confirm())) return null;
    throw new ApiError(416, "Requested range not satisfiable.", { "Content-Range": `bytes */${size}` });
  }
  const status = range ? 206 : 200;
  headers.set("Content-Length", String(range ? range.length : size));
  if (range) headers.set("Content-Range", `bytes ${range.offset}-${range.offset + range.length - 1}/${size}`);
  if (c.req.method === "HEAD") return (await confirm()) ? new Response(null, { status, headers }) : null;

  await object.beforeBody?.({ fromStart: !range || range.offset === 0 });
  const body = await bucket.get(object.key, range ? { range } : undefined);
  if (!body) return null;
  return new Response(body.body, { status, headers });
}

function responseHeaders(object: ServedObject, etag: string): Headers {
  return new Headers({
    "Content-Type": object.mime,
    ETag: etag,
    "Cache-Control": object.cacheControl,
    "Accept-Ranges": "bytes",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Content-Disposition": `inline; filename="${object.filename}"`,
    ...object.headers,
  });
}
