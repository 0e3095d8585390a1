import { ApiError } from "../../../errors";
import { PIECE_BYTES } from "../../../model/spec-limits";
import type { Reservation } from "../../../limits/isolate-memory";
import type { TusUploadRow } from "../../../model/schema";
import { concatBytes } from "../../../bytes";
import { tusTailKey } from "../../../storage/keys";
import { deleteObjects } from "../../../storage/objects";
import { fenceHolds, setTusOffset, type TailFragment } from "../../../storage/tus-uploads";
import type { Stores } from "../../../storage/stores";
import { storePiece } from "../piece-sessions";
import { sessionPieces } from "./pieces";
import { lostLease } from "./refusals";

/**
 * A tus upload's bytes, written at its offset by the one request holding its writer lease. They
 * become the 5 MiB pieces of its piece session (../piece-sessions.ts), which R2 takes as equal
 * parts of the file's multipart upload; the bytes of the piece being filled, which may arrive over
 * many requests of any size, wait in *tail fragments*: one object per request that ended inside
 * the piece, under chunks/{id}/tail/{start}.{writer}, named in the upload's row (`tail`) with the
 * offset that covers them. Once the piece is full, its fragments and the new bytes are stored as
 * the piece, and the fragments removed. So each byte is written at most twice,
 * whatever sizes the client sends in, and the upload's `offset` (moved only after what it
 * covers is stored) is always where the next request starts.
 */

/**
 * Fragments a piece may have before the next one joins them all into one: each costs a read
 * when the piece is stored, so a client sending bytes a few at a time costs one rewrite of at
 * most a piece per this many requests, not one per request.
 */
export const MAX_TAIL_FRAGMENTS = 16;

export interface TusWrite {
  upload: TusUploadRow;
  /** The lease this request holds (takeTusWriter). */
  writer: string;
  /** Renews the lease as bytes arrive (leaseKeeper). */
  keep: () => Promise<void>;
  body: AsyncIterable<Uint8Array>;
  /** Memory the request may hold, grown as it buffers (the isolate's ledger). */
  memory: Reservation;
  /** Stores `bytes` new bytes through `store`, when the client's byte budgets have room for them. */
  charge<T>(bytes: number, store: () => Promise<T>): Promise<T>;
  /**
   * How far the file may reach: its length, or while that is not known the largest file or the
   * room the account's quota leaves; `refusal` is the answer to bytes past it (a 413).
   */
  cap: { bytes: number; refusal: (size: number) => ApiError };
}

/** The fragments the upload's row says hold the bytes from its piece's start to its offset. */
const committedTail = (upload: TusUploadRow) => JSON.parse(upload.tail) as TailFragment[];

/**
 * Writes the request's bytes from the upload's offset: the new offset, and whether the file's
 * last piece is now stored. Bytes past `cap` are refused with a 413, after what came before them
 * is kept. A request that breaks off keeps what arrived before it did.
 *
 * The last piece moves no offset: only the upload made from the file does (finishTusUpload).
 * Until then the offset stays where the piece began to be sent and its fragments stay, so a
 * finish that failed or died, however far it got, is tried again by sending the piece again.
 *
 * A tus request's bytes are fenced by its writer lease: everything it stores goes under keys of
 * its own (tusTailKey, a piece's own key), and becomes part of the file only through a statement
 * that checks the lease and the offset it started from (setTusOffset, a fenced piece record). A
 * writer that lost its lease, however long it stalled, changes nothing another can see.
 */
export async function writeTusBytes(deps: Stores, write: TusWrite): Promise<{ offset: number; complete: boolean }> {
  const { db, bucket } = deps;
  const { upload, writer, memory, cap } = write;
  const id = upload.id;
  let stored = upload.offset;
  let index = Math.floor(stored / PIECE_BYTES);
  let tail = committedTail(upload);
  let fresh: Uint8Array[] = [];
  let freshBytes = 0;
  const renew = write.keep;
  /** Moves the offset (and the tail) if the lease is still this request's; `written` is removed if not. */
  const moveTo = async (offset: number, newTail: TailFragment[], written: string[]) => {
    if (!(await setTusOffset(db, id, writer, stored, offset, newTail))) {
      await deleteObjects(bucket, written).catch(() => {});
      throw lostLease();
    }
    stored = offset;
    tail = newTail;
  };
  /** The client goes back to the piece's start, whose bytes are all it can be sure are stored. */
  const backToPieceStart = async (): Promise<never> => {
    const start = index * PIECE_BYTES;
    await moveTo(start, [], []);
    throw new ApiError(409, `This upload's offset is now ${start}; ask for it (HEAD) and resume from there.`, {
      "Upload-Offset": String(start),
    });
  };
  /** The tail's bytes; a fragment gone (an operator's clean-up) sends the client back to the piece's start. */
  const readTail = async () => {
    const parts: Uint8Array[] = [];
    for (const fragment of tail) {
      const object = await bucket.get(fragment.key);
      if (!object) return backToPieceStart();
      parts.push(new Uint8Array(await object.arrayBuffer()));
    }
    return parts;
  };
  // A tail that does not hold every byte from the piece's start to the offset (a row older than
  // its `tail`, whose fragments were under keys it does not name) is a tail lost.
  if (tail.reduce((sum, f) => sum + f.size, 0) !== stored - index * PIECE_BYTES) await backToPieceStart();
  const fenced = () => ({ suffix: writer, fence: fenceHolds(id, { writer, offset: stored }), lost: lostLease });

  /** The piece being filled, whole: stored, its fragments removed. The file's last one, only stored. */
  const storeFilledPiece = async (last = false) => {
    await renew();
    const bytes = concatBytes([...(await readTail()), ...fresh]);
    const newBytes = freshBytes;
    const total = sessionPieces(upload.length);
    await write.charge(newBytes, () =>
      storePiece(deps, { accountId: upload.accountId, sessionId: id, index, total, bytes }, "tus", fenced()),
    );
    if (last) return;
    const joined = tail;
    await moveTo(stored + newBytes, [], []);
    await deleteObjects(
      bucket,
      joined.map((f) => f.key),
    ).catch(() => {});
    fresh = [];
    freshBytes = 0;
    index++;
  };

  /** The bytes that did not fill the piece: one more fragment, or all joined into one when it has many. */
  const keepFresh = async () => {
    if (freshBytes === 0) return;
    await renew();
    const newBytes = freshBytes;
    const joining = tail.length + 1 > MAX_TAIL_FRAGMENTS;
    const start = joining ? index * PIECE_BYTES : stored;
    const bytes = concatBytes(joining ? [...(await readTail()), ...fresh] : fresh);
    const key = tusTailKey(id, start, writer);
    await write.charge(newBytes, () => bucket.put(key, bytes));
    const fragment = { key, start, size: bytes.byteLength };
    const replaced = joining ? tail : [];
    await moveTo(stored + newBytes, joining ? [fragment] : [...tail, fragment], [key]);
    await deleteObjects(
      bucket,
      replaced.map((f) => f.key),
    ).catch(() => {});
    fresh = [];
    freshBytes = 0;
  };

  try {
    for await (let chunk of write.body) {
      while (chunk.byteLength > 0) {
        const at = stored + freshBytes;
        if (at + chunk.byteLength > cap.bytes) throw cap.refusal(at + chunk.byteLength);
        const room = (index + 1) * PIECE_BYTES - at;
        const take = chunk.subarray(0, room);
        chunk = chunk.subarray(take.byteLength);
        // The piece in hand and its joined copy, with the fragments read back beside them.
        await memory.growTo(2 * PIECE_BYTES + 256 * 1024);
        fresh.push(take);
        freshBytes += take.byteLength;
        const filled = stored + freshBytes === (index + 1) * PIECE_BYTES;
        if (filled && stored + freshBytes !== upload.length) await storeFilledPiece();
        else await renew();
      }
    }
    if (upload.length !== null && stored + freshBytes === upload.length) {
      // A file whose length came with an empty request may end in fragments alone, or in a full
      // piece stored (and counted) before its length was known, when it ends on a piece's end.
      if (freshBytes > 0 || tail.length > 0) await storeFilledPiece(true);
      return { offset: stored, complete: true };
    }
    await keepFresh();
  } catch (error) {
    // What arrived before the connection broke (or a refusal) is kept for the client to resume
    // after, as fragments of a piece still short of its end: an offset at a piece's end (or the
    // file's) says that piece is stored, which only storing it may make true.
    const end = stored + freshBytes;
    const short = end < (index + 1) * PIECE_BYTES && (upload.length === null || end < upload.length);
    if (freshBytes > 0 && short && !(error instanceof ApiError && [409, 423].includes(error.status))) {
      await keepFresh().catch(() => {});
    }
    throw error;
  }
  return { offset: stored, complete: false };
}
