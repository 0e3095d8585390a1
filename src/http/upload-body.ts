import { MAX_REQUEST_BYTES, MAX_TEXT_BODY_BYTES, MiB } from "../model/spec-limits";
import { tooLarge, unprocessable } from "../errors";
import { readFields } from "./body";
import { multipartBoundary } from "./multipart";
import { multipartParts, TextFields } from "./multipart-parts";

const FILE_FIELDS = new Set(["uploads", "uploads[]"]);
const TOO_LARGE =
  `Request over ${MAX_REQUEST_BYTES / MiB}MB. ` +
  "Send the file in pieces to /api/chunk, or give a link in url (up to 200MB).";

/**
 * Where a file sent in the body goes as its bytes arrive (the upload's staging), so that it is
 * never held in memory. Null stands for an empty file.
 */
type StageSentFile<File> = (chunks: AsyncIterable<Uint8Array>) => Promise<File | null>;

/** Checks the fields that came before the file part, before any byte of it is staged. */
type BeforeFile = (fieldsSoFar: Record<string, string>) => Promise<void>;

/** What an upload or replace request carries: its text fields and, when sent directly, the file. */
interface UploadBody<File> {
  fields: Record<string, string>;
  /** As `stage` made it; null when no file was sent, or an empty one. */
  file: File | null;
}

/**
 * Reads a multipart upload as it streams in: text fields are collected, the file part is staged
 * as it arrives. Fields may come before or after the file.
 */
async function readUploadForm<File>(
  body: ReadableStream<Uint8Array>,
  boundary: string,
  stage: StageSentFile<File>,
  beforeFile?: BeforeFile,
): Promise<UploadBody<File>> {
  const fields = new TextFields(MAX_TEXT_BODY_BYTES);
  let file: File | null = null;
  let fileParts = 0;
  const parts = multipartParts(body, boundary, { maxBytes: MAX_REQUEST_BYTES, tooLargeMessage: TOO_LARGE });
  for await (const part of parts) {
    if (FILE_FIELDS.has(part.name)) {
      if (++fileParts > 1) throw unprocessable("One file per request: send a single `uploads` part.");
      await beforeFile?.(fields.values);
      file = await stage(part.body);
    } else if (part.filename === null) {
      await fields.read(part);
    }
  }
  return { fields: fields.values, file };
}

/**
 * JSON fields as the text a form would carry. An array or object has no such text (turning a
 * deeply nested one into a string would even exhaust the stack): it is refused.
 */
function formFields(raw: Record<string, unknown>): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (value === null || value === undefined) continue;
    if (typeof value === "object") throw unprocessable(`${key}: must be a string, number or boolean.`);
    fields[key] = String(value);
  }
  return fields;
}

/**
 * The body of POST /api or a replace, whatever form it takes: its fields, and the file sent in
 * it, handed to `stage` as it streams in. Whatever `stage` has staged before a refusal is the
 * caller's to remove.
 */
export async function readUploadBody<File>(
  request: Request,
  stage: StageSentFile<File>,
  beforeFile?: BeforeFile,
): Promise<UploadBody<File>> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_REQUEST_BYTES) throw tooLarge(TOO_LARGE);
  const type = request.headers.get("content-type");
  const boundary = multipartBoundary(type ?? undefined);
  if (boundary && request.body) return readUploadForm(request.body, boundary, stage, beforeFile);
  if ((type ?? "").toLowerCase().startsWith("multipart/")) {
    throw unprocessable("multipart/form-data body without a boundary.");
  }
  // Without a file, the fields (url or upload_id and options) may also come as a form or JSON.
  return { fields: formFields(await readFields(request)), file: null };
}
