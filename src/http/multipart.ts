import { ApiError, tooLarge, unprocessable } from "../errors";
import { readBlocks } from "./body-blocks";
import { UnreadBytes } from "./unread-bytes";

/**
 * A streaming multipart/form-data reader. Unlike Request.formData() it never holds a file
 * part in memory: it yields each part's headers, then its body as chunks, so a caller can
 * pipe a 100 MB file to storage with a few megabytes of memory.
 */
type MultipartEvent =
  | { kind: "part"; name: string; filename: string | null; contentType: string | null }
  | { kind: "data"; chunk: Uint8Array }
  | { kind: "end" };

export interface MultipartOptions {
  /** Total bytes the body may have; more fails with 413 as soon as it is passed. */
  maxBytes: number;
  tooLargeMessage: string;
  maxHeaderBytes?: number;
  maxParts?: number;
}

const CRLF = new Uint8Array([13, 10]);
const HEADER_END = new Uint8Array([13, 10, 13, 10]);

export function multipartBoundary(contentType: string | undefined): string | null {
  if (!contentType || !/^multipart\/form-data\s*(;|$)/i.test(contentType.trim())) return null;
  // At most 70 characters (RFC 2046): a longer one is refused, not cut to a different boundary.
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;"]{1,70}))\s*(?:;|$)/i.exec(contentType);
  return match ? (match[1] ?? match[2] ?? null) : null;
}

function indexOf(haystack: Uint8Array, needle: Uint8Array, from = 0): number {
  const first = needle[0]!;
  const last = haystack.length - needle.length;
  for (let i = haystack.indexOf(first, from); i !== -1 && i <= last; i = haystack.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.length && haystack[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

/**
 * One `; key=value` parameter at the sticky position: a quoted-string (with backslash escapes)
 * or a bare value. Read in order from the start, so that text inside a quoted value (a field
 * named `a; filename="b"`) is never taken for a parameter of its own.
 */
const PARAMETER = /\s*;\s*([^\s;=]+)\s*=(?:\s*"((?:[^"\\]|\\.)*)"\s*|([^;"]*))(?=;|$)/y;

/** The parameters after a header value's first token, keys lower-cased, the first of each kept. */
function headerParameters(value: string, from: number): Map<string, string> {
  const params = new Map<string, string>();
  PARAMETER.lastIndex = from;
  for (let m = PARAMETER.exec(value); m; m = PARAMETER.exec(value)) {
    const key = m[1]!.toLowerCase();
    const text = m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : m[3]!.trim();
    if (!params.has(key)) params.set(key, text);
  }
  // Anything unreadable ends the parameters: what came before it still counts.
  return params;
}

function parseDisposition(value: string): { name: string | null; filename: string | null } {
  const type = /^\s*form-data\s*(?=;|$)/i.exec(value);
  if (!type) return { name: null, filename: null };
  const params = headerParameters(value, type[0].length);
  return { name: params.get("name") ?? null, filename: params.get("filename") ?? null };
}

function parseHeaders(block: Uint8Array) {
  const text = new TextDecoder().decode(block);
  const headers = new Map<string, string>();
  for (const line of text.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return headers;
}

const MALFORMED = "Malformed multipart/form-data body.";
const malformed = () => unprocessable(MALFORMED);
const headersTooLarge = () => unprocessable("Multipart part headers are too large.");

/**
 * Spaces or tabs a sender may put between a boundary and its CRLF (RFC 2046's transport
 * padding). Real clients send none; a bound keeps a body of nothing but padding from being
 * read to its end before it is refused.
 */
const MAX_PADDING_BYTES = 256;

export async function* multipartEvents(
  body: ReadableStream<Uint8Array>,
  boundary: string,
  options: MultipartOptions,
): AsyncGenerator<MultipartEvent> {
  const encoder = new TextEncoder();
  // The first boundary may start the body without a preceding CRLF; prefixing one lets a
  // single delimiter ("\r\n--boundary") find every boundary.
  const delimiter = encoder.encode(`\r\n--${boundary}`);
  const maxHeaderBytes = options.maxHeaderBytes ?? 16 * 1024;
  const maxParts = options.maxParts ?? 64;
  const reader = readBlocks(body);
  // What is held is bounded in every state: a delimiter's length while looking for one, the
  // padding bound after one, maxHeaderBytes in a header block (plus the chunk that brought it).
  const unread = new UnreadBytes(CRLF);
  let received = 0;
  let done = false;
  let parts = 0;
  let state: "preamble" | "after-boundary" | "headers" | "body" = "preamble";

  const pull = async (): Promise<boolean> => {
    if (done) return false;
    const chunk = await reader.read();
    if (!chunk) {
      done = true;
      return false;
    }
    received += chunk.byteLength;
    if (received > options.maxBytes) throw tooLarge(options.tooLargeMessage);
    unread.append(chunk);
    return true;
  };
  const need = async (count: number) => {
    while (unread.length < count) if (!(await pull())) throw malformed();
  };

  try {
    for (;;) {
      if (state === "preamble" || state === "body") {
        const at = indexOf(unread.bytes, delimiter);
        if (at === -1) {
          // Keep enough of the tail to recognise a delimiter split across chunks.
          const settled = unread.length - (delimiter.length - 1);
          if (settled > 0) {
            const chunk = unread.take(settled);
            if (state === "body") yield { kind: "data", chunk };
          }
          if (!(await pull())) throw malformed();
          continue;
        }
        const chunk = unread.take(at);
        if (state === "body" && at > 0) yield { kind: "data", chunk };
        unread.take(delimiter.length);
        state = "after-boundary";
      }
      if (state === "after-boundary") {
        await need(2);
        if (unread.at(0) === 45 && unread.at(1) === 45) {
          // Closing boundary: the epilogue, if any, is neither read nor held.
          yield { kind: "end" };
          return;
        }
        for (let padding = 0; ; padding++) {
          await need(1);
          const byte = unread.at(0);
          if (byte !== 32 && byte !== 9) break;
          if (padding === MAX_PADDING_BYTES)
            throw unprocessable(`${MALFORMED} More than ${MAX_PADDING_BYTES} bytes of padding after a boundary.`);
          unread.take(1);
        }
        await need(2);
        if (unread.at(0) !== 13 || unread.at(1) !== 10) throw malformed();
        unread.take(2);
        state = "headers";
      }
      if (state === "headers") {
        // Only the first maxHeaderBytes (and the blank line) are ever searched, and each byte once.
        const limit = maxHeaderBytes + HEADER_END.length;
        let searched = 0;
        let end = indexOf(unread.bytes.subarray(0, limit), HEADER_END);
        while (end === -1) {
          if (unread.length >= limit) throw headersTooLarge();
          searched = Math.max(0, unread.length - (HEADER_END.length - 1));
          if (!(await pull())) throw malformed();
          end = indexOf(unread.bytes.subarray(0, limit), HEADER_END, searched);
        }
        if (++parts > maxParts) throw unprocessable(`Too many multipart parts (at most ${maxParts}).`);
        const headers = parseHeaders(unread.take(end));
        unread.take(HEADER_END.length);
        const { name, filename } = parseDisposition(headers.get("content-disposition") ?? "");
        if (name === null) throw unprocessable("A multipart part has no form-data name.");
        yield { kind: "part", name, filename, contentType: headers.get("content-type") ?? null };
        state = "body";
      }
    }
  } catch (error) {
    // Nothing more of the body will be read: tell the sender instead of leaving it hanging.
    await reader.cancel().catch(() => {});
    if (error instanceof ApiError) throw error;
    // A client that disconnects mid-body surfaces as a stream error.
    throw malformed();
  } finally {
    reader.releaseLock();
  }
}
