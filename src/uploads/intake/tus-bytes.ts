import { ApiError, tooLarge } from "../../errors";
import { MAX_FILE_BYTES, MiB, PIECE_BYTES } from "../../model/spec-limits";
import type { Reservation } from "../../limits/isolate-memory";
import type { TusUploadRow } from "../../model/schema";
import { concatBytes } from "../../bytes";
import { tusCheckedKey, tusTailKey, tusTailPrefix } from "../../storage/keys";
import { deleteObjects } from "../../storage/objects";
import { setTusOffset, takeTusWriter } from "../../storage/tus-uploads";
import type { Stores } from "../../storage/stores";
import { storePiece } from "./piece-sessions";

/**
 * A tus upload's bytes, written at its offset by the one request holding its writer lease. They
 * become the 5 MiB pieces of its piece session (piece-sessions.ts), which R2 takes as equal parts
 * of the file's multipart upload; the bytes of the piece being filled, which may arrive over many
 * requests of any size, wait in *tail fragments*: one object per request that ended inside the
 * piece, under chunks/{id}/tail/{start}. Once the piece is full, its fragments and the new bytes
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
  body: AsyncIterable<Uint8Array>;
  /** Memory the request may hold, grown as it buffers (the isolate's ledger). */
  memory: Reservation;
  /** Stores `bytes` new bytes through `store`, when the client's byte budgets have room for them. */
  charge<T>(bytes: number, store: () => Promise<T>): Promise<T>;
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

/** A fragment of the piece being filled: where it starts in the file, and its size. */
interface Fragment {
  key: string;
  start: number;
  size: number;
}

/**
 * The fragments that hold the file's bytes from `from` (a piece's start) up to `to`, in order;
 * any other under the prefix (from a writer that died before it could remove them) is stale.
 * Null when they do not reach `to`.
 */
async function tailOf(bucket: R2Bucket, id: string, from: number, to: number) {
  const listing = await bucket.list({ prefix: tusTailPrefix(id), limit: 1000 });
  const byStart = new Map<number, Fragment>();
  for (const object of listing.objects) {
    const start = Number(object.key.slice(object.key.lastIndexOf("/") + 1));
    byStart.set(start, { key: object.key, start, size: object.size });
  }
  const chain: Fragment[] = [];
  for (let at = from; at < to; ) {
    const next = byStart.get(at);
    if (!next || at + next.size > to) return { chain: null, reached: at, stale: [...byStart.values()] };
    chain.push(next);
    byStart.delete(at);
    at += next.size;
  }
  return { chain, reached: to, stale: [...byStart.values()] };
}

async function readFragments(bucket: R2Bucket, chain: Fragment[]): Promise<Uint8Array[]> {
  const parts: Uint8Array[] = [];
  for (const fragment of chain) {
    const object = await bucket.get(fragment.key);
    if (!object) throw new Error(`tail fragment ${fragment.key} is missing`);
    parts.push(new Uint8Array(await object.arrayBuffer()));
  }
  return parts;
}

/**
 * Writes the request's bytes from the upload's offset: the new offset, and whether the file's
 * last piece is now stored. Bytes past the upload's length (or past the largest file, while it is
 * not known) are refused with a 413, after what came before them is kept. A request that breaks
 * off keeps what arrived before it did.
 *
 * The last piece moves no offset: only the upload made from the file does (finishTusUpload).
 * Until then the offset stays where the piece began to be sent and its fragments stay, so a
 * finish that failed or died, however far it got, is tried again by sending the piece again.
 */
export async function writeTusBytes(deps: Stores, write: TusWrite): Promise<{ offset: number; complete: boolean }> {
  const { db, bucket } = deps;
  const { upload, writer, memory } = write;
  const id = upload.id;
  const limit = upload.length ?? MAX_FILE_BYTES;
  let stored = upload.offset;
  let index = Math.floor(stored / PIECE_BYTES);
  const found = await tailOf(bucket, id, index * PIECE_BYTES, stored);
  if (found.stale.length)
    await deleteObjects(
      bucket,
      found.stale.map((f) => f.key),
    ).catch(() => {});
  if (!found.chain) {
    // Its fragments were lost (an operator's clean-up): the client resumes from what is there.
    await setTusOffset(db, id, writer, found.reached);
    throw new ApiError(409, `This upload's offset is now ${found.reached}; ask for it (HEAD) and resume from there.`, {
      "Upload-Offset": String(found.reached),
    });
  }
  let tail = found.chain;
  let fresh: Uint8Array[] = [];
  let freshBytes = 0;
  let renewedAt = deps.now();

  const renew = async () => {
    if (deps.now() - renewedAt < RENEW_AFTER_MS) return;
    if (!(await takeTusWriter(db, id, writer, deps.now(), WRITER_LEASE_MS))) throw lostLease();
    renewedAt = deps.now();
  };
  const moveTo = async (offset: number) => {
    if (!(await setTusOffset(db, id, writer, offset))) throw lostLease();
    stored = offset;
  };

  /** The piece being filled, whole: stored, its fragments removed. The file's last one, only stored. */
  const storeFilledPiece = async (last = false) => {
    await renew();
    const bytes = concatBytes([...(await readFragments(bucket, tail)), ...fresh]);
    const newBytes = freshBytes;
    const total = sessionPieces(upload.length);
    await write.charge(newBytes, () =>
      storePiece(deps, { accountId: upload.accountId, sessionId: id, index, total, bytes }, "tus"),
    );
    if (last) return;
    await moveTo(stored + newBytes);
    await deleteObjects(
      bucket,
      tail.map((f) => f.key),
    ).catch(() => {});
    tail = [];
    fresh = [];
    freshBytes = 0;
    index++;
  };

  /** The bytes that did not fill the piece: one more fragment, or all joined into one when it has many. */
  const keepFresh = async () => {
    if (freshBytes === 0) return;
    await renew();
    const newBytes = freshBytes;
    if (tail.length + 1 > MAX_TAIL_FRAGMENTS) {
      const start = index * PIECE_BYTES;
      const joined = concatBytes([...(await readFragments(bucket, tail)), ...fresh]);
      await write.charge(newBytes, () => bucket.put(tusTailKey(id, start), joined));
      const replaced = tail.filter((f) => f.start !== start);
      tail = [{ key: tusTailKey(id, start), start, size: joined.byteLength }];
      await moveTo(stored + newBytes);
      await deleteObjects(
        bucket,
        replaced.map((f) => f.key),
      ).catch(() => {});
    } else {
      const key = tusTailKey(id, stored);
      await write.charge(newBytes, () => bucket.put(key, concatBytes(fresh)));
      tail.push({ key, start: stored, size: newBytes });
      await moveTo(stored + newBytes);
    }
    fresh = [];
    freshBytes = 0;
  };

  try {
    for await (let chunk of write.body) {
      while (chunk.byteLength > 0) {
        const at = stored + freshBytes;
        if (at + chunk.byteLength > limit) {
          throw tooLarge(
            upload.length === null
              ? `A file may be at most ${MAX_FILE_BYTES / MiB}MB (${MAX_FILE_BYTES} bytes).`
              : `This request goes past the upload's length of ${upload.length} bytes.`,
          );
        }
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
    if (freshBytes > 0 && short && !(error instanceof ApiError && error.status === 423)) {
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

export const checksumMismatch = () =>
  new ApiError(460 as 422, "Checksum mismatch: the bytes received do not match Upload-Checksum; nothing was kept.");

/**
 * A request's `length` bytes, held under chunks/{id}/checked while their digest is taken as they
 * arrive, and given back for writing once it matches: nothing of a request whose checksum fails
 * is written to the upload. The caller removes the object (`discard`) once written.
 */
export async function checkedBytes(
  bucket: R2Bucket,
  id: string,
  body: ReadableStream<Uint8Array>,
  length: number,
  sum: Checksum,
) {
  const key = tusCheckedKey(id);
  const digest = new crypto.DigestStream(sum.algorithm);
  const digestWriter = digest.getWriter();
  // Each chunk is hashed before it is passed on, so the body is read no faster than R2 takes it.
  const hashing = new TransformStream<Uint8Array, Uint8Array>({
    async transform(chunk, controller) {
      await digestWriter.write(chunk);
      controller.enqueue(chunk);
    },
  });
  const sized = new FixedLengthStream(length);
  const discard = () => bucket.delete(key).catch(() => {});
  try {
    await Promise.all([body.pipeThrough(hashing).pipeTo(sized.writable), bucket.put(key, sized.readable)]);
  } catch {
    await discard();
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
