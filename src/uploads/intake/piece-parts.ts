import { MAX_FILE_BYTES, PIECE_BYTES } from "../../model/spec-limits";
import { SNIFF_BYTES, sniff } from "../../media/sniff";
import { newObjectKey, pieceKey, piecePrefix } from "../../storage/keys";
import { deletePrefix } from "../../storage/objects";
import {
  attachMultipart,
  markAssembled,
  piecesOf,
  planPartOffsets,
  recordPiece,
  takePartSlot,
  type PartRecord,
} from "../../storage/piece-sessions";
import type { PieceSessionRow, StoredPieceRow } from "../../model/schema";
import { newUploadId } from "../create";
import type { Stores } from "../../storage/stores";

/**
 * Pieces as parts of the file itself. When a session's first piece (index 0) is a full 5 MiB
 * piece whose first bytes say what the file is, it starts an R2 multipart upload (its own
 * `multipartId`) of the file's final object, under an upload id reserved for the file (a new
 * upload takes that id, so the object is under its prefix). Every full piece, and the last, then
 * goes up as a part; finishing completes the multipart upload and reads the file once (type,
 * metadata, hash) instead of writing it again. R2 wants every part but the last to be one size,
 * so any other piece stays an object of its own under chunks/, as do pieces sent before the
 * first one or after the multipart upload was completed (by a finish that then failed);
 * finishing turns the objects that can be parts into parts first, and otherwise assembles the
 * file from both.
 */

/** R2 numbers parts from 1 to 10,000. */
const MAX_PART_NUMBER = 10_000;
/** The most pieces of a file that can be in parts: 200 MB in full pieces. */
const MAX_PARTED_PIECES = MAX_FILE_BYTES / PIECE_BYTES;
/**
 * Each sending of a piece as a part takes a part number of its own (the session's next slot
 * within the piece's range), so that two requests sending one piece at once never overwrite
 * each other's part: the piece's row names the one part it stands for.
 */
const SLOTS_PER_PIECE = Math.floor(MAX_PART_NUMBER / MAX_PARTED_PIECES);

const fitsAsPart = (index: number, size: number, total: number) =>
  total >= 2 && total <= MAX_PARTED_PIECES && (size === PIECE_BYTES || index === total - 1);

const partNumber = (index: number, slot: number) => index * SLOTS_PER_PIECE + slot + 1;

const multipartOf = (bucket: R2Bucket, session: PieceSessionRow) =>
  bucket.resumeMultipartUpload(session.objectKey!, session.multipartId!);

async function startMultipart(deps: Stores, session: PieceSessionRow, bytes: Uint8Array): Promise<PieceSessionRow> {
  const media = sniff(bytes.subarray(0, SNIFF_BYTES));
  if (!media) return session;
  const reservedUploadId = newUploadId();
  const objectKey = newObjectKey(reservedUploadId, media.ext);
  const multipart = await deps.bucket.createMultipartUpload(objectKey, { httpMetadata: { contentType: media.mime } });
  const multipartId = multipart.uploadId;
  let attached: PieceSessionRow;
  try {
    attached = await attachMultipart(deps.db, session.id, { fileUploadId: reservedUploadId, objectKey, multipartId });
  } catch (error) {
    await multipart.abort().catch(() => {});
    throw error;
  }
  // The first piece sent twice at once: the other request's multipart upload is the session's.
  if (attached.multipartId !== multipartId) await multipart.abort().catch(() => {});
  return attached;
}

/** Whether a piece may become a part, so that opening its session takes a part slot for it. */
export const mayBePart = (index: number, size: number, total: number) => fitsAsPart(index, size, total);

/**
 * Stores a piece as a part of the session's file when it can be one (starting the multipart
 * upload with the first piece); null when the piece is to be stored as an object instead.
 * `slot` is the part slot taken when the session was opened, if one was.
 */
export async function storeAsPart(
  deps: Stores,
  session: PieceSessionRow,
  index: number,
  bytes: Uint8Array,
  slot: number | null,
): Promise<(PartRecord & { objectKey: string }) | null> {
  if (!fitsAsPart(index, bytes.byteLength, session.total)) return null;
  if (!session.multipartId && index === 0) session = await startMultipart(deps, session, bytes);
  if (!session.multipartId || session.assembled) return null;
  slot ??= await takePartSlot(deps.db, session.id);
  if (slot >= SLOTS_PER_PIECE) return null;
  const number = partNumber(index, slot);
  try {
    const part = await multipartOf(deps.bucket, session).uploadPart(number, bytes);
    return { number, etag: part.etag, objectKey: session.objectKey! };
  } catch (error) {
    // Completed by a finish that failed before it could say so: the piece becomes an object.
    if (await deps.bucket.head(session.objectKey!)) return null;
    throw error;
  }
}

/**
 * At finish: completes the session's multipart upload with the pieces that are parts, so that
 * their bytes can be read, after turning the pieces stored as objects into parts when all of
 * them can be (pieces sent before the first one). The planned offsets are written before the
 * upload is completed, so that a finish that fails after completing it leaves the session whole
 * (the object's existence says it was completed). Returns the pieces as they are then, the
 * parts this call completed the object from and the object it made (both null when it did not
 * complete it): a piece sent again while it ran may have changed its row since, but not the object.
 */
export async function assembleParts(
  deps: Stores,
  session: PieceSessionRow,
  pieces: StoredPieceRow[],
): Promise<{ pieces: StoredPieceRow[]; completedFrom: StoredPieceRow[] | null; completed: R2Object | null }> {
  const none = { completedFrom: null, completed: null };
  if (!session.multipartId || session.assembled) return { pieces, ...none };
  const { db, bucket } = deps;
  if (!(await bucket.head(session.objectKey!))) {
    const multipart = multipartOf(bucket, session);
    const objects = pieces.filter((piece) => !piece.partEtag);
    // Read again only when pieces became parts here: with none, the rows read by the caller are
    // as good as any read now (a piece sent again meanwhile may change its row either way).
    if (objects.length > 0 && objects.every((piece) => fitsAsPart(piece.index, piece.size, session.total))) {
      for (const piece of objects) {
        const object = await bucket.get(piece.objectKey ?? pieceKey(session.id, piece.index));
        if (!object) throw new Error(`piece ${piece.index} of ${session.id} is missing from storage`);
        const bytes = new Uint8Array(await object.arrayBuffer());
        const slot = await takePartSlot(db, session.id);
        if (slot >= SLOTS_PER_PIECE || !fitsAsPart(piece.index, bytes.byteLength, session.total)) break;
        const number = partNumber(piece.index, slot);
        const part = await multipart.uploadPart(number, bytes);
        await recordPiece(db, session.id, piece.index, bytes.byteLength, { number, etag: part.etag });
      }
      pieces = await piecesOf(db, session.id);
    }
    const parts = pieces.filter((piece) => piece.partEtag);
    if (parts.length === 0) return { pieces, ...none };
    await planPartOffsets(db, session.id, PIECE_BYTES);
    const completed = await multipart.complete(
      parts.map((piece) => ({ partNumber: piece.partNumber!, etag: piece.partEtag! })),
    );
    await markAssembled(db, session.id);
    return { pieces: await piecesOf(db, session.id), completedFrom: parts, completed };
  }
  await markAssembled(db, session.id);
  return { pieces: await piecesOf(db, session.id), ...none };
}

/** The stored bytes of one piece: a range of the session's completed object, or an object of its own. */
export async function getStoredPiece(bucket: R2Bucket, session: PieceSessionRow, piece: StoredPieceRow) {
  if (piece.objectOffset === null) return bucket.get(piece.objectKey ?? pieceKey(session.id, piece.index));
  // The last piece runs to the end of the object: its row may be older than the part that won.
  const last = piece.index === session.total - 1;
  return bucket.get(session.objectKey!, {
    range: last ? { offset: piece.objectOffset } : { offset: piece.objectOffset, length: piece.size },
  });
}

const isGone = (error: unknown) => /NoSuchUpload|does not exist|not found/i.test(String(error));

/**
 * Removes what a session stored: its pieces, its multipart upload and its completed object
 * (unless that is the upload's file, `keep`). A multipart upload that is no more (completed or
 * aborted) is no failure; one the session says it assembled was completed, and is not asked.
 */
export async function removePieceStorage(bucket: R2Bucket, session: PieceSessionRow, keep: string | null = null) {
  await deletePrefix(bucket, piecePrefix(session.id));
  if (!session.multipartId) return;
  if (!session.assembled)
    await multipartOf(bucket, session)
      .abort()
      .catch((error) => {
        if (!isGone(error)) throw error;
      });
  if (session.objectKey !== keep) await bucket.delete(session.objectKey!);
}

/** Whether a session's reserved upload's files are still being made: the orphan sweep leaves them be. */
export const stillAssembling = (session: PieceSessionRow, now: number) =>
  (session.status === "open" && session.expiresAt > now) ||
  (session.status === "finishing" && (session.leaseUntil ?? 0) > now);
