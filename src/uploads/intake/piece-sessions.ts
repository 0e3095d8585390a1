import { MAX_FILE_BYTES, MiB, PIECE_BYTES } from "../../model/spec-limits";
import { randomBase62 } from "../../crypto";
import { tooLarge, unprocessable } from "../../errors";
import {
  claimPieceSession,
  closePieceSession,
  expiredPieceSessions,
  findPieceSession,
  forgetPiece,
  openPieceSession,
  piecesOf,
  purgePieceTombstones,
  recordPiece,
  reopenPieceSession,
} from "../../storage/piece-sessions";
import { PIECES_PREFIX, pieceKey } from "../../storage/keys";
import { deletePrefix } from "../../storage/objects";
import type { PieceSender, PieceSessionRow } from "../../model/schema";
import type { SQL } from "drizzle-orm";
import { findUploadInAnyState } from "../../storage/uploads";
import type { WrittenObject } from "../../storage/object-writer";
import { assembleParts, getStoredPiece, mayBePart, removePieceStorage, storeAsPart } from "./piece-parts";
import { scanPiece, scannedFile } from "./piece-scan";
import type { StagedFile } from "./staged-file";
import type { Stores } from "../../storage/stores";

/**
 * Large files sent in pieces (POST /api/chunk) under a client-chosen upload_id, then finished
 * by POST /api (or replace) with that upload_id. Pieces live in R2, as parts of the file's own
 * multipart upload where they can be (piece-parts.ts) and otherwise under chunks/{upload_id}/;
 * their sizes and the session are in D1. The session belongs to the account whose key sent its
 * first piece.
 */
/** Far more than 200 MB in 5 MiB pieces (40) needs; bounds the rows one session can make. */
export const MAX_PIECES = 4096;
export const SESSION_LIFETIME_MS = 2 * 60 * 60_000;
/** How long a finishing request holds the session before another may take over. */
const FINISH_LEASE_MS = 10 * 60_000;
/** Finished and discarded sessions are remembered this long, so their upload_id stays refused. */
const TOMBSTONE_MS = 30 * 24 * 60 * 60_000;

/** A session's id: the client's upload_id. */
export const SESSION_ID_PATTERN = /^[0-9a-fA-F]{32}$/;

const expired = () =>
  unprocessable(
    "This upload_id has expired: unfinished sessions are discarded 2 hours after their first piece. " +
      "Send the file again under a new upload_id.",
  );
const finished = () => unprocessable("This upload_id was already finished. Use a new upload_id for another file.");

export interface Piece {
  accountId: string;
  /** The client's upload_id. */
  sessionId: string;
  index: number;
  total: number;
  bytes: Uint8Array;
}

/**
 * How a tus upload's writer stores a piece: under a key of its own request (`suffix`, its lease),
 * recorded only while `fence` (its lease, in the same statement) holds; lostLease otherwise.
 */
export interface FencedStore {
  suffix: string;
  fence: SQL;
  lost: () => Error;
}

/**
 * Stores one piece; sending the same index again replaces it. `sender` is who cuts the file into
 * pieces: the client (/api/chunk), or the service for a tus upload; neither may add to the other's.
 */
export async function storePiece(
  deps: Stores,
  piece: Piece,
  sender: PieceSender = "chunk",
  fenced?: FencedStore,
): Promise<void> {
  const { db, bucket } = deps;
  const now = deps.now();
  const expiresAt = now + SESSION_LIFETIME_MS;
  const { row: session, slot } = await openPieceSession(
    db,
    { id: piece.sessionId, accountId: piece.accountId, total: piece.total, createdAt: now, expiresAt },
    mayBePart(piece.index, piece.bytes.byteLength, piece.total),
  );
  if (session.accountId !== piece.accountId || session.sender !== sender)
    throw unprocessable("This upload_id is in use by another session. Choose another (32 random hex characters).");
  if (session.status === "consumed") throw finished();
  if (session.status === "discarded" || session.expiresAt <= now) throw expired();
  if (session.status === "finishing")
    throw unprocessable("This upload_id is being finished; no more pieces can be added to it.");
  if (session.total !== piece.total) {
    throw unprocessable(`total ${piece.total} differs from this upload's total of ${session.total} pieces.`);
  }

  const part = await storeAsPart(deps, session, piece.index, piece.bytes, slot);
  const objectKey = fenced ? `${pieceKey(piece.sessionId, piece.index)}.${fenced.suffix}` : null;
  const key = objectKey ?? pieceKey(piece.sessionId, piece.index);
  if (!part) await bucket.put(key, piece.bytes);
  const sessionBytes = await recordPiece(db, piece.sessionId, piece.index, piece.bytes.byteLength, part, {
    objectKey: part ? null : objectKey,
    fence: fenced?.fence,
  });
  if (sessionBytes === null) {
    // A writer that lost its lease: what it stored is no piece of the file.
    if (!part) await bucket.delete(key).catch(() => {});
    throw fenced!.lost();
  }
  if (sessionBytes > MAX_FILE_BYTES) {
    // A part nothing records is left out when the multipart upload is completed.
    await forgetPiece(db, piece.sessionId, piece.index);
    if (!part) await bucket.delete(key);
    throw tooLarge(
      `The pieces of this upload add up to more than ${MAX_FILE_BYTES / MiB}MB, the largest file the service takes.`,
    );
  }
  if (part) await scanPiece(piece.sessionId, part.objectKey, piece.index, part.number, piece.bytes);
}

/** The upload a tus upload's session became, for its row to say so as the session is spent; none for others'. */
const tusUploadOf = (session: PieceSessionRow, madeUploadId: string | null | undefined) =>
  session.sender === "tus" ? madeUploadId : null;

/** "3, 7-9" */
function ranges(numbers: number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < numbers.length; ) {
    let j = i;
    while (j + 1 < numbers.length && numbers[j + 1] === numbers[j]! + 1) j++;
    parts.push(i === j ? `${numbers[i]}` : `${numbers[i]}-${numbers[j]}`);
    i = j + 1;
  }
  return parts.join(", ");
}

export interface PiecedFile {
  session: PieceSessionRow;
  size: number;
  /**
   * The session's completed object when it holds the whole file, its pieces in order: it may
   * become the upload's file as it is, for a new upload under the id reserved for the file.
   */
  whole: (WrittenObject & { reservedUploadId: string }) | null;
  /**
   * `whole` as staging it would make it, when its pieces were read as they arrived (piece-scan.ts);
   * null when it must be read.
   */
  scanned(): Promise<StagedFile | null>;
  /** The file's bytes in order, read from storage as they are consumed. */
  bytes(): AsyncIterable<Uint8Array>;
  /**
   * The file became upload `madeUploadId` (a new one keeping `keptKey`, or a duplicate keeping
   * nothing): the session is spent and its storage removed.
   */
  consume(keptKey: string | null, madeUploadId?: string): Promise<void>;
  /** Finishing failed: the session is open again, pieces kept, for another try. */
  release(): Promise<void>;
}

const missingPieces = (indices: number[], total: number) =>
  unprocessable(
    `Pieces missing: ${ranges(indices)} (of ${total}, counted from 0). Send them to /api/chunk, then finish again.`,
  );

/**
 * Takes a session of this account for finishing, once every piece is there, and puts its
 * pieces together where they were parts. Whatever the reason it cannot be finished, the answer
 * is a 422 that says which.
 */
export async function claimPiecedFile(
  deps: Stores,
  accountId: string,
  sessionId: string,
  sender: PieceSender = "chunk",
): Promise<PiecedFile> {
  const { db, bucket } = deps;
  const now = deps.now();
  if (!SESSION_ID_PATTERN.test(sessionId)) throw unprocessable("upload_id must be 32 hexadecimal characters.");
  const session = await findPieceSession(db, sessionId);
  // Another account's session is as unknown as one that never existed, as is a tus upload's here.
  if (!session || session.accountId !== accountId || session.sender !== sender)
    throw unprocessable("Unknown upload_id: no pieces were sent under it with this account's keys.");
  if (session.status === "consumed") throw finished();
  if (session.status === "discarded" || session.expiresAt <= now) throw expired();

  const claimed = await claimPieceSession(db, sessionId, accountId, now, FINISH_LEASE_MS, sender === "tus");
  if (!claimed) throw unprocessable("This upload_id is already being finished by another request.");
  const release = () => reopenPieceSession(db, sessionId);
  try {
    // An upload made from it by a finish whose last step failed: the session was spent.
    if (claimed.fileUploadId && (await findUploadInAnyState(db, claimed.fileUploadId))) {
      await closePieceSession(db, sessionId, "consumed", tusUploadOf(claimed, claimed.fileUploadId));
      throw finished();
    }
    let pieces = await piecesOf(db, sessionId);
    const present = new Set(pieces.map((p) => p.index));
    const missing: number[] = [];
    for (let i = 0; i < claimed.total && missing.length < 1000; i++) if (!present.has(i)) missing.push(i);
    if (missing.length) throw missingPieces(missing, claimed.total);

    const assembled = await assembleParts(deps, claimed, pieces);
    pieces = assembled.pieces;
    const session = (await findPieceSession(db, sessionId))!;
    // Parts sent as the multipart upload was completed, and so left out of it.
    const lost = session.assembled
      ? pieces.filter((p) => p.partEtag && p.objectOffset === null).map((p) => p.index)
      : [];
    if (lost.length) throw missingPieces(lost, session.total);

    const size = pieces.reduce((sum, p) => sum + p.size, 0);
    // The object this call completed is the one a read of it would find; one completed before is read.
    const whole =
      session.assembled && pieces.every((p) => p.objectOffset === p.index * PIECE_BYTES)
        ? (assembled.completed ?? (await bucket.head(session.objectKey!)))
        : null;
    const reservedUploadId = session.fileUploadId!;
    const file = whole?.size === size ? { key: whole.key, size, etag: whole.httpEtag, reservedUploadId } : null;
    return {
      session,
      size,
      whole: file,
      // Checked against the parts the object was made of, never a later read of the rows.
      scanned: async () =>
        file && assembled.completedFrom ? scannedFile(sessionId, assembled.completedFrom, claimed.total, file) : null,
      async *bytes() {
        if (file) {
          const object = await bucket.get(file.key);
          if (!object) throw new Error(`the assembled file of ${sessionId} is missing from storage`);
          return yield* object.body as unknown as AsyncIterable<Uint8Array>;
        }
        for (const piece of pieces) {
          const object = await getStoredPiece(bucket, session, piece);
          if (!object) throw new Error(`piece ${piece.index} of ${sessionId} is missing from storage`);
          yield* object.body as unknown as AsyncIterable<Uint8Array>;
        }
      },
      async consume(keptKey, madeUploadId) {
        await closePieceSession(db, sessionId, "consumed", tusUploadOf(session, madeUploadId));
        await removePieceStorage(bucket, session, keptKey);
      },
      release,
    };
  } catch (error) {
    await release();
    throw error;
  }
}

/** Ends a session unfinished, its pieces removed: storage first, so a discarded session never keeps any. */
export async function discardPieceSession(deps: Stores, session: PieceSessionRow): Promise<void> {
  await removePieceStorage(deps.bucket, session);
  await closePieceSession(deps.db, session.id, "discarded");
}

/** The cron job's part: discard sessions left unfinished past their lifetime, with their pieces. */
export async function sweepPieceSessions(deps: Stores, limit = 100): Promise<number> {
  const now = deps.now();
  const due = await expiredPieceSessions(deps.db, now, limit);
  for (const session of due) {
    // An upload made from it by a finish whose last step failed keeps its file, and the session was spent.
    const made = session.fileUploadId ? await findUploadInAnyState(deps.db, session.fileUploadId) : undefined;
    // Storage first: a session marked discarded never keeps pieces behind, even after a crash here.
    await removePieceStorage(deps.bucket, session, made?.objectKey ?? null);
    await closePieceSession(deps.db, session.id, made ? "consumed" : "discarded", tusUploadOf(session, made?.id));
  }
  await sweepLeftoverPieces(deps, limit);
  await purgePieceTombstones(deps.db, now - TOMBSTONE_MS);
  return due.length;
}

/**
 * Pieces whose session is spent or unknown: left by a finish whose clean-up failed after the
 * upload was made, or by a piece stored just as its session ended. `limit` session prefixes a
 * run, starting after a random id and wrapping around, so that open sessions whose ids sort first
 * never keep the run from the others.
 */
async function sweepLeftoverPieces(deps: Stores, limit = 100) {
  const startAfter = `${PIECES_PREFIX}${randomBase62(10)}`;
  const list = (options: R2ListOptions) =>
    deps.bucket.list({ prefix: PIECES_PREFIX, delimiter: "/", ...options }).then((l) => l.delimitedPrefixes);
  const prefixes = await list({ startAfter, limit });
  if (prefixes.length < limit) {
    const before = await list({ limit: limit - prefixes.length });
    prefixes.push(...before.filter((prefix) => prefix <= startAfter && !prefixes.includes(prefix)));
  }
  for (const prefix of prefixes) {
    const id = prefix.slice(PIECES_PREFIX.length, -1);
    const session = await findPieceSession(deps.db, id);
    if (!session || session.status === "consumed" || session.status === "discarded")
      await deletePrefix(deps.bucket, prefix);
  }
}
