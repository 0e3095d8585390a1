import { and, asc, eq, inArray, isNull, lt, or, type SQL, sql } from "drizzle-orm";
import type { Database } from "./db";
import { storedPieces, pieceSessions, tusUploads, type PieceSessionRow } from "../model/schema";

export interface PartRecord {
  number: number;
  etag: string;
}

/**
 * Opens the session on its first piece; a session that exists already is left as it is. With
 * `takePartSlot`, a piece that may become a part of the session's multipart upload takes its
 * part slot in the same round trip (every piece of a session comes through here), when the
 * session has an upload still open for parts; `slot` is null otherwise.
 */
export async function openPieceSession(
  db: Database,
  session: Pick<PieceSessionRow, "id" | "accountId" | "total" | "createdAt" | "expiresAt">,
  takePartSlot: boolean,
): Promise<{ row: PieceSessionRow; slot: number | null }> {
  const [, taken, [row]] = await db.batch([
    db.insert(pieceSessions).values(session).onConflictDoNothing(),
    db
      .update(pieceSessions)
      .set({ partsBegun: sql`${pieceSessions.partsBegun} + 1` })
      .where(
        and(
          eq(pieceSessions.id, session.id),
          sql`${takePartSlot ? 1 : 0} = 1`,
          eq(pieceSessions.accountId, session.accountId),
          eq(pieceSessions.status, "open"),
          sql`${pieceSessions.multipartId} IS NOT NULL`,
          eq(pieceSessions.assembled, false),
        ),
      )
      .returning({ slot: pieceSessions.partsBegun }),
    db.select().from(pieceSessions).where(eq(pieceSessions.id, session.id)),
  ]);
  return { row: row!, slot: taken[0] ? taken[0].slot - 1 : null };
}

export async function findPieceSession(db: Database, id: string) {
  const [row] = await db.select().from(pieceSessions).where(eq(pieceSessions.id, id));
  return row;
}

/**
 * Records a stored piece (replacing one of the same index), as an object (under `objectKey`, or
 * the piece's own key when null) or as a part, and returns the session's bytes so far. With
 * `fence`, only while that condition holds (a tus writer's lease, checked in the same
 * transaction): null when it no longer does, and nothing was recorded.
 */
export async function recordPiece(
  db: Database,
  sessionId: string,
  index: number,
  size: number,
  part: PartRecord | null = null,
  stored: { objectKey?: string | null; fence?: SQL } = {},
): Promise<number | null> {
  const objectKey = stored.objectKey ?? null;
  const where = { size, partNumber: part?.number ?? null, partEtag: part?.etag ?? null, objectOffset: null, objectKey };
  const upsert = db
    .insert(storedPieces)
    .values({ sessionId, index, ...where })
    .onConflictDoUpdate({ target: [storedPieces.sessionId, storedPieces.index], set: where, setWhere: stored.fence });
  const sum = db
    .select({ bytes: sql<number>`coalesce(sum(${storedPieces.size}), 0)` })
    .from(storedPieces)
    .where(eq(storedPieces.sessionId, sessionId));
  if (!stored.fence) {
    const [, [row]] = await db.batch([upsert, sum]);
    return Number(row?.bytes ?? 0);
  }
  const thisPiece = and(eq(storedPieces.sessionId, sessionId), eq(storedPieces.index, index));
  // What this call stored: its own part number, or its own object's key.
  const mine = and(thisPiece, part ? eq(storedPieces.partNumber, part.number) : eq(storedPieces.objectKey, objectKey!));
  const [, , [row], [recorded]] = await db.batch([
    upsert,
    // A new row the fence would not have let in is taken out again, in the same transaction.
    db.delete(storedPieces).where(and(mine, sql`NOT (${stored.fence})`)),
    sum,
    db.select({ index: storedPieces.index }).from(storedPieces).where(mine),
  ]);
  return recorded ? Number(row?.bytes ?? 0) : null;
}

export async function forgetPiece(db: Database, sessionId: string, index: number) {
  await db.delete(storedPieces).where(and(eq(storedPieces.sessionId, sessionId), eq(storedPieces.index, index)));
}

export function piecesOf(db: Database, sessionId: string) {
  return db.select().from(storedPieces).where(eq(storedPieces.sessionId, sessionId)).orderBy(asc(storedPieces.index));
}

/**
 * Takes an open session for finishing (or one whose finisher died): one conditional UPDATE, so
 * two finishing requests can never both assemble it. With `takeOver`, a session being finished is
 * taken whatever its lease (a tus upload's, whose writer lease already makes its finisher the only
 * one: a finishing session there is one whose finisher died).
 */
export async function claimPieceSession(
  db: Database,
  id: string,
  accountId: string,
  now: number,
  leaseMs: number,
  takeOver = false,
) {
  const [row] = await db
    .update(pieceSessions)
    .set({ status: "finishing", leaseUntil: now + leaseMs })
    .where(
      and(
        eq(pieceSessions.id, id),
        eq(pieceSessions.accountId, accountId),
        sql`${pieceSessions.expiresAt} > ${now}`,
        or(
          eq(pieceSessions.status, "open"),
          and(
            eq(pieceSessions.status, "finishing"),
            or(lt(pieceSessions.leaseUntil, now), sql`${takeOver ? 1 : 0} = 1`),
          ),
        ),
      ),
    )
    .returning();
  return row;
}

/**
 * Ends a session: `consumed` once its file became an upload, `discarded` when it expired. A tus
 * upload's session consumed as upload `madeUploadId` (made, or the duplicate found) finishes the
 * tus upload in the same transaction, so that a finish that dies after it is still found.
 */
export async function closePieceSession(
  db: Database,
  id: string,
  status: "consumed" | "discarded",
  madeUploadId?: string | null,
) {
  const close = db.update(pieceSessions).set({ status, leaseUntil: null }).where(eq(pieceSessions.id, id));
  const forget = db.delete(storedPieces).where(eq(storedPieces.sessionId, id));
  if (status !== "consumed" || !madeUploadId) {
    await db.batch([close, forget]);
    return;
  }
  await db.batch([
    close,
    forget,
    db
      .update(tusUploads)
      .set({
        ended: "finished",
        uploadId: madeUploadId,
        failure: null,
        offset: sql`coalesce(${tusUploads.length}, ${tusUploads.offset})`,
        writer: null,
        writerUntil: null,
      })
      .where(and(eq(tusUploads.id, id), isNull(tusUploads.ended))),
  ]);
}

/** A finish that failed gives the session back, pieces and all, for another try. */
export async function reopenPieceSession(db: Database, id: string) {
  await db
    .update(pieceSessions)
    .set({ status: "open", leaseUntil: null })
    .where(and(eq(pieceSessions.id, id), eq(pieceSessions.status, "finishing")));
}

/** Sessions past their lifetime that still hold pieces (open, or finishing with a dead finisher). */
export function expiredPieceSessions(db: Database, now: number, limit: number) {
  return db
    .select()
    .from(pieceSessions)
    .where(
      and(
        lt(pieceSessions.expiresAt, now),
        or(
          eq(pieceSessions.status, "open"),
          and(eq(pieceSessions.status, "finishing"), lt(pieceSessions.leaseUntil, now)),
        ),
      ),
    )
    .limit(limit);
}

/** Tombstones old enough that no client still holds their upload_id. */
export async function purgePieceTombstones(db: Database, before: number) {
  await db
    .delete(pieceSessions)
    .where(and(inArray(pieceSessions.status, ["consumed", "discarded"]), lt(pieceSessions.expiresAt, before)));
}

/**
 * Gives the session its multipart upload, unless another request (the first piece sent twice at
 * once) gave it one first; returns the session as it is then.
 */
export async function attachMultipart(
  db: Database,
  id: string,
  multipart: Pick<PieceSessionRow, "fileUploadId" | "objectKey" | "multipartId">,
) {
  const [won] = await db
    .update(pieceSessions)
    .set(multipart)
    .where(and(eq(pieceSessions.id, id), isNull(pieceSessions.multipartId)))
    .returning();
  return won ?? (await findPieceSession(db, id))!;
}

/** A part number slot of the session's own, so that two requests never write the same part. */
export async function takePartSlot(db: Database, id: string): Promise<number> {
  const [row] = await db
    .update(pieceSessions)
    .set({ partsBegun: sql`${pieceSessions.partsBegun} + 1` })
    .where(eq(pieceSessions.id, id))
    .returning({ slot: pieceSessions.partsBegun });
  return row!.slot - 1;
}

/**
 * Before the multipart upload is completed with the pieces recorded as parts: where each will be
 * in the object. The parts before the last are all one size (`partBytes`), so a piece's place is
 * that size times the parts before it.
 */
export async function planPartOffsets(db: Database, id: string, partBytes: number) {
  await db.run(sql`
    UPDATE chunk_pieces SET object_offset = ${partBytes} * (
      SELECT count(*) FROM chunk_pieces AS before
      WHERE before.session_id = chunk_pieces.session_id AND before.part_etag IS NOT NULL
        AND before."index" < chunk_pieces."index"
    )
    WHERE session_id = ${id} AND part_etag IS NOT NULL`);
}

export async function markAssembled(db: Database, id: string) {
  await db.update(pieceSessions).set({ assembled: true }).where(eq(pieceSessions.id, id));
}

/** The piece sessions that reserved any of `reservedUploadIds` (up to 100) for the upload they make. */
export function pieceSessionsMaking(db: Database, reservedUploadIds: string[]) {
  return db.select().from(pieceSessions).where(inArray(pieceSessions.fileUploadId, reservedUploadIds));
}
