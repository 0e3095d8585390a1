import { ApiError } from "../../../errors";
import { MAX_FILE_BYTES, PIECE_BYTES } from "../../../model/spec-limits";
import type { TusUploadRow } from "../../../model/schema";
import { tusTailPrefix } from "../../../storage/keys";
import { deleteObjects } from "../../../storage/objects";
import { piecesOf } from "../../../storage/piece-sessions";
import { setTusOffset } from "../../../storage/tus-uploads";
import type { Stores } from "../../../storage/stores";
import { lostLease } from "./refusals";

/** A tus upload's bytes as the pieces of its piece session: how many, and whether they make the file. */

export const piecesOfLength = (length: number) => Math.max(1, Math.ceil(length / PIECE_BYTES));

/**
 * The piece session's count of pieces for an upload of `length` bytes; while the length is not
 * known, as many as the largest file has (set once it is, with the length: setTusLength).
 */
export const sessionPieces = (length: number | null) =>
  length === null ? Math.ceil(MAX_FILE_BYTES / PIECE_BYTES) : piecesOfLength(length);

/**
 * The upload's pieces, as recorded, hold its `length` bytes: each whole but the last. If not (a
 * piece recorded short from a tail that had lost bytes), the offset goes back to the first piece
 * that is wrong and the client is told to resume from there (a 503 it retries): a file is never
 * made short.
 */
export async function assertPiecesMakeTheFile(deps: Stores, upload: TusUploadRow, writer: string) {
  const length = upload.length!;
  const sizes = new Map((await piecesOf(deps.db, upload.id)).map((p) => [p.index, p.size]));
  for (let index = 0; index < piecesOfLength(length); index++) {
    if (sizes.get(index) === Math.min(PIECE_BYTES, length - index * PIECE_BYTES)) continue;
    const start = index * PIECE_BYTES;
    console.error(JSON.stringify({ tus: upload.id, pieceWrong: index, size: sizes.get(index) ?? null }));
    if (!(await setTusOffset(deps.db, upload.id, writer, upload.offset, start, []))) throw lostLease();
    const fragments = await deps.bucket.list({ prefix: tusTailPrefix(upload.id) });
    await deleteObjects(
      deps.bucket,
      fragments.objects.map((o) => o.key),
    ).catch(() => {});
    throw new ApiError(
      503,
      `This upload's stored pieces do not make its ${length} bytes: its offset is now ${start}; ` +
        "ask for it (HEAD) and resume from there.",
      { "Retry-After": "2", "Upload-Offset": String(start) },
    );
  }
}
