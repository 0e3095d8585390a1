import { concatBytes } from "../bytes";
import { ApiError, tooLarge, unprocessable } from "../errors";

/**
 * A streaming multipart/form-data reader. Unlike Request.formData() it never holds a file
 * part in memory: it yields each part's headers, then its body as chunks, so a caller can
 * pipe a 100 MB file to storage with a few megabytes of memory.
 */
export type MultipartEvent =
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
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
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

function parseDisposition(value: string): { name: string | null; filename: string | null } {
  const param = (key: string) => {
    const re = new RegExp(`;\\s*${key}=(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]*))`, "i");
    const m = re.exec(value);
    if (!m) return null;
    return m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : (m[2] ?? null);
  };
  if (!/^\s*form-data\s*(;|$)/i.test(value)) return { name: null, filename: null };
  return { name: param("name"), filename: param("filename") };
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

const malformed = () => unprocessable("Malformed multipart/form-data body.");

export async function* readMultipart(
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
  const reader = body.getReader();
  let buffer: Uint8Array = CRLF;
  let received = 0;
  let done = false;
  let parts = 0;
  let state: "preamble" | "after-boundary" | "headers" | "body" = "preamble";

  const pull = async (): Promise<boolean> => {
    if (done) return false;
    const result = await reader.read();
    if (result.done) {
      done = true;
      return false;
    }
    received += result.value.byteLength;
    if (received > options.maxBytes) throw tooLarge(options.tooLargeMessage);
    buffer = buffer.length === 0 ? result.value : concatBytes([buffer, result.value]);
    return true;
  };

  try {
    for (;;) {
      if (state === "preamble" || state === "body") {
        const at = indexOf(buffer, delimiter);
        if (at === -1) {
          // Keep enough of the tail to recognise a delimiter split across chunks.
          const keep = delimiter.length - 1;
          if (state === "body" && buffer.length > keep) {
            const chunk = buffer.subarray(0, buffer.length - keep);
            buffer = buffer.subarray(buffer.length - keep);
            yield { kind: "data", chunk };
          } else if (state === "preamble" && buffer.length > keep) {
            buffer = buffer.subarray(buffer.length - keep);
          }
          if (!(await pull())) throw malformed();
          continue;
        }
        if (state === "body" && at > 0) yield { kind: "data", chunk: buffer.subarray(0, at) };
        buffer = buffer.subarray(at + delimiter.length);
        state = "after-boundary";
      }
      if (state === "after-boundary") {
        while (buffer.length < 2) if (!(await pull())) throw malformed();
        if (buffer[0] === 45 && buffer[1] === 45) {
          // Closing boundary: the epilogue, if any, is ignored.
          yield { kind: "end" };
          return;
        }
        // Transport padding (spaces/tabs) may follow a boundary before its CRLF.
        let i = 0;
        for (;;) {
          while (i >= buffer.length) if (!(await pull())) throw malformed();
          if (buffer[i] === 32 || buffer[i] === 9) i++;
          else break;
        }
        while (buffer.length < i + 2) if (!(await pull())) throw malformed();
        if (buffer[i] !== 13 || buffer[i + 1] !== 10) throw malformed();
        buffer = buffer.subarray(i + 2);
        state = "headers";
      }
      if (state === "headers") {
        let end = indexOf(buffer, HEADER_END);
        while (end === -1) {
          if (buffer.length > maxHeaderBytes) throw unprocessable("Multipart part headers are too large.");
          if (!(await pull())) throw malformed();
          end = indexOf(buffer, HEADER_END);
        }
        if (++parts > maxParts) throw unprocessable(`Too many multipart parts (at most ${maxParts}).`);
        const headers = parseHeaders(buffer.subarray(0, end));
        buffer = buffer.subarray(end + HEADER_END.length);
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
