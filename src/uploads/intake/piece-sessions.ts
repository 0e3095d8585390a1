import { MAX_FILE_BYTES, MiB } from "../../spec-limits";
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
import { PIECES_PREFIX, pieceKey, piecePrefix } from "../../storage/keys";
import { deletePrefix } from "../../storage/objects";
import type { PieceSessionRow } from "../../storage/schema";
import type { UploadDeps } from "../upload-deps";

/**
 * Large files sent in pieces (POST /api/chunk) under a client-chosen upload_id, then finished
 * by POST /api (or replace) with that upload_id. Pieces live in R2 under chunks/{upload_id}/,
 * their sizes and the session in D1. The session belongs to the account whose key sent its
 * first piece.
 */
export const PIECE_BYTES = 5 * MiB;
/** Far more than 200 MB in 5 MiB pieces (40) needs; bounds the rows one session can make. */
export const MAX_PIECES = 4096;
export const SESSION_LIFETIME_MS = 2 * 60 * 60_000;
/** How long a finishing request holds the session before another may take over. */
const FINISH_LEASE_MS = 10 * 60_000;
/** Finished and discarded sessions are remembered this long, so their upload_id stays refused. */
const TOMBSTONE_MS = 30 * 24 * 60 * 60_000;

export const UPLOAD_ID_PATTERN = /^[0-9a-fA-F]{32}$/;

const expired = () =>
  unprocessable("This upload_id has expired: unfinished sessions are discarded 2 hours after their first piece. Send the file again under a new upload_id.");
const finished = () => unprocessable("This upload_id was already finished. Use a new upload_id for another file.");

export interface Piece {
  accountId: string;
  uploadId: string;
  index: number;
  total: number;
  bytes: Uint8Array;
}

/** Stores one piece; sending the same index again replaces it. */
export async function storePiece(deps: UploadDeps, piece: Piece): Promise<void> {
  const { db, bucket } = deps;
  const now = deps.now();
  const session = await openPieceSession(db, {
    id: piece.uploadId,
    accountId: piece.accountId,
    total: piece.total,
    createdAt: now,
    expiresAt: now + SESSION_LIFETIME_MS,
  });
  if (session.accountId !== piece.accountId) throw unprocessable("This upload_id is in use by another session. Choose another (32 random hex characters).");
  if (session.status === "consumed") throw finished();
  if (session.status === "discarded" || session.expiresAt <= now) throw expired();
  if (session.status === "finishing") throw unprocessable("This upload_id is being finished; no more pieces can be added to it.");
  if (session.total !== piece.total) {
    throw unprocessable(`total ${piece.total} differs from this upload's total of ${session.total} pieces.`);
  }

  const key = pieceKey(piece.uploadId, piece.index);
  await bucket.put(key, piece.bytes);
  const sessionBytes = await recordPiece(db, piece.uploadId, piece.index, piece.bytes.byteLength);
  if (sessionBytes > MAX_FILE_BYTES) {
    await forgetPiece(db, piece.uploadId, piece.index);
    await bucket.delete(key);
    throw tooLarge(`The pieces of this upload add up to more than ${MAX_FILE_BYTES / MiB}MB, the largest file the service takes.`);
  }
}

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
  /** The pieces in order, read from storage as they are consumed. */
  bytes(): AsyncIterable<Uint8Array>;
  /** The file became an upload: the session is spent and its pieces deleted. */
  consume(): Promise<void>;
  /** Finishing failed: the session is open again, pieces kept, for another try. */
  release(): Promise<void>;
}

/**
 * Takes a session of this account for finishing, once every piece is there. Whatever the
 * reason it cannot be finished, the answer is a 422 that says which.
 */
export async function claimPiecedFile(deps: UploadDeps, accountId: string, uploadId: string): Promise<PiecedFile> {
  const { db, bucket } = deps;
  const now = deps.now();
  if (!UPLOAD_ID_PATTERN.test(uploadId)) throw unprocessable("upload_id must be 32 hexadecimal characters.");
  const session = await findPieceSession(db, uploadId);
  // Another account's session is as unknown as one that never existed.
  if (!session || session.accountId !== accountId) throw unprocessable("Unknown upload_id: no pieces were sent under it with this account's keys.");
  if (session.status === "consumed") throw finished();
  if (session.status === "discarded" || session.expiresAt <= now) throw expired();

  const claimed = await claimPieceSession(db, uploadId, accountId, now, FINISH_LEASE_MS);
  if (!claimed) throw unprocessable("This upload_id is already being finished by another request.");
  const release = () => reopenPieceSession(db, uploadId);
  try {
    const pieces = await piecesOf(db, uploadId);
    const present = new Set(pieces.map((p) => p.index));
    const missing: number[] = [];
    for (let i = 0; i < claimed.total && missing.length < 1000; i++) if (!present.has(i)) missing.push(i);
    if (missing.length) throw unprocessable(`Pieces missing: ${ranges(missing)} (of ${claimed.total}, counted from 0). Send them to /api/chunk, then finish again.`);

    const size = pieces.reduce((sum, p) => sum + p.size, 0);
    return {
      session: claimed,
      size,
      async *bytes() {
        for (let index = 0; index < claimed.total; index++) {
          const object = await bucket.get(pieceKey(uploadId, index));
          if (!object) throw new Error(`piece ${index} of ${uploadId} is missing from storage`);
          yield* object.body as unknown as AsyncIterable<Uint8Array>;
        }
      },
      async consume() {
        await closePieceSession(db, uploadId, "consumed");
        await deletePrefix(bucket, piecePrefix(uploadId));
      },
      release,
    };
  } catch (error) {
    await release();
    throw error;
  }
}

/** The cron job's part: discard sessions left unfinished past their lifetime, with their pieces. */
export async function sweepPieceSessions(deps: UploadDeps, limit = 100): Promise<number> {
  const now = deps.now();
  const due = await expiredPieceSessions(deps.db, now, limit);
  for (const { id } of due) {
    // Storage first: a session marked discarded never keeps pieces behind, even after a crash here.
    await deletePrefix(deps.bucket, piecePrefix(id));
    await closePieceSession(deps.db, id, "discarded");
  }
  await sweepLeftoverPieces(deps);
  await purgePieceTombstones(deps.db, now - TOMBSTONE_MS);
  return due.length;
}

/**
 * Pieces whose session is spent or unknown: left by a finish whose clean-up failed after the
 * upload was made, or by a piece stored just as its session ended.
 */
async function sweepLeftoverPieces(deps: UploadDeps, limit = 100) {
  const listing = await deps.bucket.list({ prefix: PIECES_PREFIX, delimiter: "/", limit });
  for (const prefix of listing.delimitedPrefixes) {
    const id = prefix.slice(PIECES_PREFIX.length, -1);
    const session = await findPieceSession(deps.db, id);
    if (!session || session.status === "consumed" || session.status === "discarded") await deletePrefix(deps.bucket, prefix);
  }
}
