import { concatBytes } from "../../bytes";
import { unprocessable } from "../../errors";
import { decodeBase64 } from "../../http/base64";
import type { FileSource } from "../../uploads/intake/incoming-file";
import type { ReadUploadRequest } from "../../uploads/pipeline";
import type { FormPart } from "./form";

type Stage = Parameters<ReadUploadRequest>[0];

/** Where a compatible request's file comes from: sent (staged as it arrived) or a link. */
export type CompatSource = Pick<FileSource, "sent" | "url">;

const LINK = /^\s*https?:\/\//i;
/** Enough of a text source to tell a link from base64, whatever whitespace leads it. */
const PEEK_BYTES = 64;
/** A link longer than this is no link a client means. */
const MAX_LINK_BYTES = 8 * 1024;
const EMPTY = () => unprocessable("Empty upload source: send the file, a link or base64 text as `source`.");

const latin1 = new TextDecoder("latin1");

async function readLink(chunks: AsyncIterable<Uint8Array>): Promise<string> {
  const parts: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of chunks) {
    length += chunk.length;
    if (length > MAX_LINK_BYTES) throw unprocessable(`source: a link may have at most ${MAX_LINK_BYTES} bytes.`);
    parts.push(chunk);
  }
  return new TextDecoder().decode(concatBytes(parts)).trim();
}

/**
 * A source sent as text (Chevereto's `source` as a plain field, or in the query): a link when it
 * starts with http:// or https://, else the file in base64, decoded and staged as it streams in
 * (invalid base64 is a 422, and what was staged is removed with the request's file).
 * `base64` false: only a link will do (a GET request).
 */
export async function textSource(body: AsyncIterable<Uint8Array>, stage: Stage, base64: boolean) {
  const chunks = body[Symbol.asyncIterator]();
  const peeked: Uint8Array[] = [];
  let length = 0;
  while (length < PEEK_BYTES) {
    const next = await chunks.next();
    if (next.done) break;
    peeked.push(next.value);
    length += next.value.length;
  }
  const head = concatBytes(peeked);
  const all = async function* () {
    yield head;
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
  };
  if (LINK.test(latin1.decode(head.subarray(0, PEEK_BYTES)))) return { sent: null, url: await readLink(all()) };
  if (!base64) throw unprocessable("A GET upload takes a link as `source`: send a file or base64 with POST.");
  const sent = await stage(decodeBase64(all(), "source", { verticalTab: true }));
  if (!sent) throw EMPTY();
  return { sent };
}

/** The file of a form's source part: a file part as it is, a plain field as text (textSource). */
export async function partSource(part: FormPart, stage: Stage): Promise<CompatSource> {
  if (part.filename === null) return textSource(part.body, stage, true);
  const sent = await stage(part.body);
  if (!sent) throw EMPTY();
  return { sent };
}

/** One string as a stream of its bytes. */
export async function* bytesOf(text: string): AsyncGenerator<Uint8Array> {
  yield new TextEncoder().encode(text);
}

/**
 * The album a compatible endpoint's `album_id` names: one of this service's album ids (10 letters
 * and digits). Anything else (the tools' own numeric or short ids, set up for another server) is
 * ignored, as every `album_id` was before the service had albums.
 */
export function albumOf(fields: Record<string, string | undefined>): { album?: string } {
  const album = fields.album_id?.trim();
  return album && /^[0-9A-Za-z]{10}$/.test(album) ? { album } : {};
}
