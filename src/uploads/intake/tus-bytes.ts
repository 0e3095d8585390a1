import { ApiError } from "../../errors";
import { MAX_FILE_BYTES, PIECE_BYTES } from "../../model/spec-limits";
import type { Reservation } from "../../limits/isolate-memory";
import type { TusUploadRow } from "../../model/schema";
import { concatBytes } from "../../bytes";
import { tusCheckedKey, tusTailKey } from "../../storage/keys";
import { deleteObjects } from "../../storage/objects";
import { fenceHolds, renewTusWriter, setTusOffset, type TailFragment } from "../../storage/tus-uploads";
import type { Stores } from "../../storage/stores";
import { storePiece } from "./piece-sessions";

/**
 * A tus upload's bytes, written at its offset by the one request holding its writer lease. They
 * become the 5 MiB pieces of its piece session (piece-sessions.ts), which R2 takes as equal parts
 * of the file's multipart upload; the bytes of the piece being filled, which may arrive over many
 * requests of any size, wait in *tail fragments*: one object per request that ended inside the
 * piece, under chunks/{id}/tail/{start}.{writer}, named in the upload's row (`tail`) with the
 * offset that covers them. Once the piece is full, its fragments and the new bytes
 * are stored as the piece, and the fragments removed. So each byte is written at most twice,
 * whatever sizes the client sends in, and the upload's `offset` (moved only after what it
 * covers is stored) is always where the next request starts.
 */

/** How long a writer's lease lasts unless renewed; a writer that died is replaced after it. */
export const WRITER_LEASE_MS = 20_000;
/** A writer renews its lease when this much of it has gone, while bytes keep arriving. */
const RENEW_AFTER_MS = 5_000;
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

export const piecesOfLength = (length: number) => Math.max(1, Math.ceil(length / PIECE_BYTES));

/**
 * The piece session's count of pieces for an upload of `length` bytes; while the length is not
 * known, as many as the largest file has (set once it is, with the length: setTusLength).
 */
export const sessionPieces = (length: number | null) =>
  length === null ? Math.ceil(MAX_FILE_BYTES / PIECE_BYTES) : piecesOfLength(length);

export const lostLease = () =>
  new ApiError(423, "Another request is writing this upload now. Ask for its offset (HEAD) and resume from there.");

/**
 * What a writer calls as its bytes arrive: renews its lease every few seconds, counted from when
 * it was taken (`upload.writerUntil`), however long the request has been reading; throws
 * lostLease once it is no longer its own.
 */
export function leaseKeeper(deps: Stores, upload: TusUploadRow, writer: string): () => Promise<void> {
  let renewedAt = (upload.writerUntil ?? deps.now()) - WRITER_LEASE_MS;
  return async () => {
    if (deps.now() - renewedAt < RENEW_AFTER_MS) return;
    if (!(await renewTusWriter(deps.db, upload.id, writer, deps.now(), WRITER_LEASE_MS))) throw lostLease();
    renewedAt = deps.now();
  };
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

/** An Upload-Checksum: the algorithm's Web Crypto name, and the digest the client computed. */
export interface Checksum {
  algorithm: "SHA-1" | "SHA-256";
  digest: Uint8Array;
}

/** tus's 460 (a status Hono's types do not name): the bytes sent are not those the client summed. */
const CHECKSUM_MISMATCH = 460 as 422;
export const checksumMismatch = () =>
  new ApiError(
    CHECKSUM_MISMATCH,
    "Checksum mismatch: the bytes received do not match Upload-Checksum; nothing was kept.",
  );
export const isChecksumMismatch = (error: unknown): error is ApiError =>
  error instanceof ApiError && error.status === CHECKSUM_MISMATCH;

/**
 * Storage refused or failed a write (R2 answers 429 to a key written more than once a second):
 * the client sends the bytes again in a moment, as tus clients do after a 5xx. Pieces a request
 * stored before the failure may have been kept: the offset says what is.
 */
export const storageBusy = () =>
  new ApiError(
    503,
    "Storage is busy. Ask for the upload's offset (HEAD) and resume from there: the bytes before it are kept.",
    { "Retry-After": "2" },
  );

/**
 * A request's `length` bytes, held under a key of the request's own while their digest is taken
 * as they arrive, and given back for writing once it matches: nothing of a request whose
 * checksum fails is written to the upload. `keep` is called as the bytes arrive (the writer's
 * lease renewed; it throws once lost). The caller removes the object (`discard`) once written.
 */
export async function checkedBytes(
  bucket: R2Bucket,
  id: string,
  writer: string,
  body: ReadableStream<Uint8Array>,
  length: number,
  sum: Checksum,
  keep: () => Promise<void>,
) {
  const key = tusCheckedKey(id, writer);
  const digest = new crypto.DigestStream(sum.algorithm);
  const digestWriter = digest.getWriter();
  let refused: unknown = null;
  // The bytes the body gave, and whether it ended by itself (short of `length`, it is the client's).
  let received = 0;
  let ended = false;
  // Each chunk is hashed before it is passed on, so the body is read no faster than R2 takes it.
  const hashing = new TransformStream<Uint8Array, Uint8Array>({
    flush() {
      ended = true;
    },
    async transform(chunk, controller) {
      received += chunk.byteLength;
      try {
        await keep();
      } catch (error) {
        refused = error;
        throw error;
      }
      await digestWriter.write(chunk);
      controller.enqueue(chunk);
    },
  });
  const sized = new FixedLengthStream(length);
  const discard = () => bucket.delete(key).catch(() => {});
  // Which side failed first: the body (short, broken off) is the client's; storage's is a 503.
  let first: "body" | "storage" | null = null;
  // A put that fails reads no more: the body stops being read with it, rather than wait.
  const stop = new AbortController();
  const reading = body
    .pipeThrough(hashing)
    .pipeTo(sized.writable, { signal: stop.signal })
    .catch((error) => {
      first ??= "body";
      throw error;
    });
  const storing = bucket.put(key, sized.readable).catch((error) => {
    first ??= "storage";
    stop.abort(error);
    throw error;
  });
  const [read, stored] = await Promise.allSettled([reading, storing]);
  if (read.status === "rejected" || stored.status === "rejected") {
    await discard();
    if (refused) throw refused;
    // A body that ended short fails the put too, as soon as the read does: it is still the client's.
    if (first === "storage" && !(ended && received < length)) {
      console.error(JSON.stringify({ tus: id, checkedBytes: String((stored as PromiseRejectedResult).reason) }));
      throw storageBusy();
    }
    throw new ApiError(400, `The request's body ended before its Content-Length of ${length} bytes; nothing was kept.`);
  }
  await digestWriter.close();
  const got = new Uint8Array(await digest.digest);
  if (got.byteLength !== sum.digest.byteLength || got.some((byte, i) => byte !== sum.digest[i])) {
    await discard();
    throw checksumMismatch();
  }
  const object = await bucket.get(key);
  if (!object) throw new Error(`the checked bytes of tus upload ${id} are missing`);
  return { body: object.body as ReadableStream<Uint8Array>, discard };
}
