import type { Context } from "hono";
import { ApiError, notFound } from "../errors";

export interface ServedObject {
  key: string;
  size: number;
  etag: string;
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
 */
export async function serveObject(c: Context, object: ServedObject): Promise<Response> {
  const headers = new Headers({
    "Content-Type": object.mime,
    ETag: object.etag,
    "Cache-Control": object.cacheControl,
    "Accept-Ranges": "bytes",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Content-Disposition": `inline; filename="${object.filename}"`,
    ...object.headers,
  });
  if (etagMatches(c.req.header("If-None-Match"), object.etag)) return new Response(null, { status: 304, headers });

  const ifRange = c.req.header("If-Range");
  const range = ifRange && ifRange !== object.etag ? null : parseRange(c.req.header("Range"), object.size);
  if (range === "unsatisfiable") {
    throw new ApiError(416, "Requested range not satisfiable.", { "Content-Range": `bytes */${object.size}` });
  }
  const status = range ? 206 : 200;
  const length = range ? range.length : object.size;
  headers.set("Content-Length", String(length));
  if (range) headers.set("Content-Range", `bytes ${range.offset}-${range.offset + range.length - 1}/${object.size}`);
  if (c.req.method === "HEAD") return new Response(null, { status, headers });

  await object.beforeBody?.({ fromStart: !range || range.offset === 0 });
  const body = await c.env.FILES.get(object.key, range ? { range } : undefined);
  if (!body) throw notFound("File not found.");
  return new Response(body.body, { status, headers });
}
