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
  const bytes = await TusByteWriter.open(deps, write);
  try {
    for await (const chunk of write.body) await bytes.take(chunk);
    return await bytes.end();
  } catch (error) {
    await bytes.breakOff(error);
    throw error;
  }
}

/**
 * One request's bytes on their way into the upload: a state machine, one instance per request.
 *
 *   state    event                                            next state
 *   (open)   the row's tail does not hold the bytes from      none: the offset goes back to the
 *            the piece's start to the offset                  piece's start, a 409 that says so
 *   (open)   the tail holds them                              filling
 *   filling  bytes that leave the piece short                 filling, the bytes held in memory
 *   filling  bytes that fill the piece, not the file's last   filling the next piece: this one
 *                                                             stored, the offset moved past it
 *   filling  bytes past the cap                               broken (a 413)
 *   filling  the body ends on the file's last byte            complete: the last piece stored,
 *                                                             the offset left at its start
 *   filling  the body ends short of it                        kept: the held bytes stored as one
 *                                                             more fragment (or all the piece's
 *                                                             joined into one), the offset moved
 *   filling  the body breaks off, or a step fails             broken: the held bytes kept as in
 *                                                             `kept` while they leave the piece
 *                                                             short, unless the offset or the
 *                                                             lease was lost (409, 423)
 *
 * `offset` and `tail` are the row's as this writer last moved them; `index` is the piece being
 * filled, and `held` the request's bytes of it, not yet stored.
 */
class TusByteWriter {
  private state: "filling" | "complete" | "kept" | "broken" = "filling";
  private offset: number;
  private index: number;
  private tail: TailFragment[];
  private held: Uint8Array[] = [];
  private heldBytes = 0;

  private constructor(
    private readonly deps: Stores,
    private readonly write: TusWrite,
  ) {
    this.offset = write.upload.offset;
    this.index = Math.floor(this.offset / PIECE_BYTES);
    this.tail = committedTail(write.upload);
  }

  static async open(deps: Stores, write: TusWrite): Promise<TusByteWriter> {
    const bytes = new TusByteWriter(deps, write);
    // A tail that does not hold every byte from the piece's start to the offset (a row older than
    // its `tail`, whose fragments were under keys it does not name) is a tail lost.
    const tailBytes = bytes.tail.reduce((sum, f) => sum + f.size, 0);
    if (tailBytes !== bytes.offset - bytes.pieceStart) await bytes.backToPieceStart();
    return bytes;
  }

  /** Event: bytes arrived. They go into the piece being filled, and a piece filled is stored. */
  async take(chunk: Uint8Array) {
    const { upload, memory, cap } = this.write;
    let rest = chunk;
    while (rest.byteLength > 0) {
      const at = this.offset + this.heldBytes;
      if (at + rest.byteLength > cap.bytes) throw cap.refusal(at + rest.byteLength);
      const piece = rest.subarray(0, this.pieceEnd - at);
      rest = rest.subarray(piece.byteLength);
      // The piece in hand and its joined copy, with the fragments read back beside them.
      await memory.growTo(2 * PIECE_BYTES + 256 * 1024);
      this.held.push(piece);
      this.heldBytes += piece.byteLength;
      const end = this.offset + this.heldBytes;
      if (end === this.pieceEnd && end !== upload.length) await this.storeFilledPiece();
      else await this.write.keep();
    }
  }

  /** Event: the body ended. The file's last byte completes it; bytes short of that are kept. */
  async end(): Promise<{ offset: number; complete: boolean }> {
    const { length } = this.write.upload;
    if (length !== null && this.offset + this.heldBytes === length) {
      // A file whose length came with an empty request may end in fragments alone, or in a full
      // piece stored (and counted) before its length was known, when it ends on a piece's end.
      // The last piece is only stored: the finish moves the offset.
      if (this.heldBytes > 0 || this.tail.length > 0) await this.storeHeld();
      this.state = "complete";
      return { offset: this.offset, complete: true };
    }
    await this.keepHeld();
    this.state = "kept";
    return { offset: this.offset, complete: false };
  }

  /**
   * Event: the body broke off, or a step refused or failed. What arrived before is kept for the
   * client to resume after, as fragments of a piece still short of its end: an offset at a
   * piece's end (or the file's) says that piece is stored, which only storing it may make true.
   */
  async breakOff(error: unknown) {
    if (this.state !== "filling") return;
    this.state = "broken";
    const end = this.offset + this.heldBytes;
    const { length } = this.write.upload;
    const short = end < this.pieceEnd && (length === null || end < length);
    const lost = error instanceof ApiError && [409, 423].includes(error.status);
    if (this.heldBytes > 0 && short && !lost) await this.keepHeld().catch(() => {});
  }

  private get pieceStart() {
    return this.index * PIECE_BYTES;
  }

  private get pieceEnd() {
    return (this.index + 1) * PIECE_BYTES;
  }

  /** Moves the offset (and the tail) if the lease is still this request's; `written` is removed if not. */
  private async moveTo(offset: number, tail: TailFragment[], written: string[]) {
    const { upload, writer } = this.write;
    if (!(await setTusOffset(this.deps.db, upload.id, writer, this.offset, offset, tail))) {
      await deleteObjects(this.deps.bucket, written).catch(() => {});
      throw lostLease();
    }
    this.offset = offset;
    this.tail = tail;
  }

  /** The client goes back to the piece's start, whose bytes are all it can be sure are stored. */
  private async backToPieceStart(): Promise<never> {
    const start = this.pieceStart;
    await this.moveTo(start, [], []);
    throw new ApiError(409, `This upload's offset is now ${start}; ask for it (HEAD) and resume from there.`, {
      "Upload-Offset": String(start),
    });
  }

  /** The tail's bytes; a fragment gone (an operator's clean-up) sends the client back to the piece's start. */
  private async readTail() {
    const parts: Uint8Array[] = [];
    for (const fragment of this.tail) {
      const object = await this.deps.bucket.get(fragment.key);
      if (!object) return this.backToPieceStart();
      parts.push(new Uint8Array(await object.arrayBuffer()));
    }
    return parts;
  }

  /** The tail and the held bytes, stored as the piece being filled, charged for the held bytes. */
  private async storeHeld() {
    await this.write.keep();
    const { upload, writer } = this.write;
    const bytes = concatBytes([...(await this.readTail()), ...this.held]);
    const piece = { accountId: upload.accountId, sessionId: upload.id, index: this.index, bytes };
    const fenced = { suffix: writer, fence: fenceHolds(upload.id, { writer, offset: this.offset }), lost: lostLease };
    await this.write.charge(this.heldBytes, () =>
      storePiece(this.deps, { ...piece, total: sessionPieces(upload.length) }, "tus", fenced),
    );
  }

  /** A whole piece before the file's last: stored, the offset moved past it, its fragments removed. */
  private async storeFilledPiece() {
    await this.storeHeld();
    const joined = this.tail;
    await this.moveTo(this.offset + this.heldBytes, [], []);
    await this.removeFragments(joined);
    this.dropHeld();
    this.index++;
  }

  /** The held bytes, as one more fragment, or all the piece's joined into one when it has many. */
  private async keepHeld() {
    if (this.heldBytes === 0) return;
    await this.write.keep();
    const { upload, writer } = this.write;
    const joining = this.tail.length + 1 > MAX_TAIL_FRAGMENTS;
    const start = joining ? this.pieceStart : this.offset;
    const bytes = concatBytes(joining ? [...(await this.readTail()), ...this.held] : this.held);
    const key = tusTailKey(upload.id, start, writer);
    await this.write.charge(this.heldBytes, () => this.deps.bucket.put(key, bytes));
    const fragment = { key, start, size: bytes.byteLength };
    const replaced = joining ? this.tail : [];
    await this.moveTo(this.offset + this.heldBytes, joining ? [fragment] : [...this.tail, fragment], [key]);
    await this.removeFragments(replaced);
    this.dropHeld();
  }

  private async removeFragments(fragments: TailFragment[]) {
    await deleteObjects(
      this.deps.bucket,
      fragments.map((f) => f.key),
    ).catch(() => {});
  }

  private dropHeld() {
    this.held = [];
    this.heldBytes = 0;
  }
}
