import { unprocessable } from "../errors";
import { decodeBase64Text } from "../http/base64";
import { MiB } from "../model/spec-limits";

/**
 * The largest file an agent may hand over inline, as base64 in a tool's arguments. The whole
 * message is held in memory (it is JSON), and base64 is a third larger than the file: 2 MiB of
 * file is about 2.7 MiB of message, under MCP_BODY_BYTES. Anything larger goes by link, or in
 * pieces through the API, which streams.
 */
export const INLINE_FILE_BYTES = 2 * MiB;

/** The largest MCP request body read: an inline file's base64 and the rest of its message. */
export const MCP_BODY_BYTES = 4 * MiB;

export const LARGER_FILES =
  "Larger files: give a public link to upload_from_url (up to 200 MB), or send the file in 5 MiB " +
  "pieces to POST /api/chunk and finish with POST /api and its upload_id (docs/api.md).";

/** The file's bytes from base64 (standard or URL-safe, with or without a `data:` prefix). */
export function decodeInlineFile(text: string): Uint8Array {
  const base64 = text.replace(/^data:[^,]*;base64,/i, "").replace(/\s+/g, "");
  // Checked before decoding: a file over the ceiling is refused without being held twice.
  const size = Math.floor((base64.replace(/=+$/, "").length * 3) / 4);
  if (size > INLINE_FILE_BYTES) {
    throw unprocessable(`The file is ${size} bytes; inline files may be at most ${INLINE_FILE_BYTES}. ${LARGER_FILES}`);
  }
  if (size === 0) throw unprocessable("data: the file is empty.");
  const bytes = decodeBase64Text(base64, { urlSafe: true, unpadded: true });
  if (!bytes) throw unprocessable("data: not valid base64.");
  return bytes;
}
