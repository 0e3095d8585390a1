import type { Context } from "hono";
import { concatBytes } from "../../bytes";
import { MAX_TEXT_BODY_BYTES, MiB, PIECE_BYTES } from "../../model/spec-limits";
import type { AppEnv } from "../../env";
import { parseOrThrow, tooLarge, unprocessable } from "../../errors";
import { assertMayUpload } from "../../accounts/callers";
import { withPieceBytes } from "../../http/throttles/budgets";
import { isolateMemory, type Reservation } from "../../limits/isolate-memory";
import { multipartBoundary } from "../../http/multipart";
import { multipartParts, TextFields } from "../../http/multipart-parts";
import type { Stores } from "../../deps";
import { storePiece } from "../../uploads/intake/piece-sessions";
import { envelope } from "../envelope";
import { chunkFields, chunkResponseSchema } from "./schemas";

const PIECE_TOO_LARGE = `A piece may be at most ${PIECE_BYTES / MiB}MB (${PIECE_BYTES} bytes).`;
/** A piece and its fields, with room for the multipart framing. */
const MAX_CHUNK_REQUEST_BYTES = PIECE_BYTES + 64 * 1024;

/**
 * Reads the piece, refusing it as soon as it passes 5 MiB; it is small enough to hold, with its
 * joined copy, as long as the isolate's memory has room for both (`memory` grows as it comes).
 */
async function readPiecePart(body: AsyncIterable<Uint8Array>, memory: Reservation): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of body) {
    length += chunk.byteLength;
    if (length > PIECE_BYTES) throw tooLarge(PIECE_TOO_LARGE);
    await memory.growTo(2 * length + SCAN_SLICE_SLACK);
    chunks.push(chunk);
  }
  return concatBytes(chunks);
}

/** Room for the slices a piece is read in as it is stored (piece-scan.ts) and the chunk in hand. */
const SCAN_SLICE_SLACK = 256 * 1024;

/** POST /api/chunk: one piece of a large file, with its fields in any order. */
export async function handleChunk(c: Context<AppEnv>, deps: Stores) {
  const memory = isolateMemory.open();
  try {
    return await receiveChunk(c, deps, memory);
  } finally {
    memory.release();
  }
}

async function receiveChunk(c: Context<AppEnv>, deps: Stores, memory: Reservation) {
  assertMayUpload(c.var.caller);
  if (Number(c.req.header("content-length") ?? "0") > MAX_CHUNK_REQUEST_BYTES) throw tooLarge(PIECE_TOO_LARGE);
  const boundary = multipartBoundary(c.req.header("content-type"));
  if (!boundary || !c.req.raw.body)
    throw unprocessable("Send the piece as multipart/form-data with upload_id, index, total and chunk.");

  const fields = new TextFields(MAX_TEXT_BODY_BYTES);
  let piece: Uint8Array | null = null;
  const parts = multipartParts(c.req.raw.body, boundary, {
    maxBytes: MAX_CHUNK_REQUEST_BYTES,
    tooLargeMessage: PIECE_TOO_LARGE,
  });
  for await (const part of parts) {
    if (part.name === "chunk") {
      if (piece) throw unprocessable("One piece per request: send a single `chunk` part.");
      piece = await readPiecePart(part.body, memory);
    } else if (part.filename === null) {
      await fields.read(part);
    }
  }
  const { upload_id, index, total } = parseOrThrow(chunkFields, fields.values);
  if (index >= total) throw unprocessable(`index must be below total (index ${index}, total ${total}).`);
  if (!piece || piece.byteLength === 0) throw unprocessable("No piece: send its bytes as the `chunk` file part.");

  // Charged its size before it is stored: the daily byte budgets bound what pieces can park in storage.
  const bytes: Uint8Array = piece;
  await withPieceBytes(c, bytes.byteLength, () =>
    storePiece(deps, { accountId: c.var.caller.accountId, sessionId: upload_id.toLowerCase(), index, total, bytes }),
  );
  return envelope(c, chunkResponseSchema, { chunk_size: PIECE_BYTES });
}
