import { and, asc, eq, inArray, lt, or, sql } from "drizzle-orm";
import type { Database } from "./db";
import { storedPieces, pieceSessions, type PieceSessionRow } from "./schema";

/** Opens the session on its first piece; a session that exists already is left as it is. */
export async function openPieceSession(db: Database, session: Pick<PieceSessionRow, "id" | "accountId" | "total" | "createdAt" | "expiresAt">) {
  await db.insert(pieceSessions).values(session).onConflictDoNothing();
  const [row] = await db.select().from(pieceSessions).where(eq(pieceSessions.id, session.id));
  return row!;
}

export async function findPieceSession(db: Database, id: string) {
  const [row] = await db.select().from(pieceSessions).where(eq(pieceSessions.id, id));
  return row;
}

/** Records a stored piece (replacing one of the same index) and returns the session's bytes so far. */
export async function recordPiece(db: Database, sessionId: string, index: number, size: number): Promise<number> {
  await db
    .insert(storedPieces)
    .values({ sessionId, index, size })
    .onConflictDoUpdate({ target: [storedPieces.sessionId, storedPieces.index], set: { size } });
  const [row] = await db
    .select({ bytes: sql<number>`coalesce(sum(${storedPieces.size}), 0)` })
    .from(storedPieces)
    .where(eq(storedPieces.sessionId, sessionId));
  return Number(row?.bytes ?? 0);
}

export async function forgetPiece(db: Database, sessionId: string, index: number) {
  await db.delete(storedPieces).where(and(eq(storedPieces.sessionId, sessionId), eq(storedPieces.index, index)));
}

export function piecesOf(db: Database, sessionId: string) {
  return db.select().from(storedPieces).where(eq(storedPieces.sessionId, sessionId)).orderBy(asc(storedPieces.index));
}

/**
 * Takes an open session for finishing (or one whose finisher died): one conditional UPDATE, so
 * two finishing requests can never both assemble it.
 */
export async function claimPieceSession(db: Database, id: string, accountId: string, now: number, leaseMs: number) {
  const [row] = await db
    .update(pieceSessions)
    .set({ status: "finishing", leaseUntil: now + leaseMs })
    .where(
      and(
        eq(pieceSessions.id, id),
        eq(pieceSessions.accountId, accountId),
        sql`${pieceSessions.expiresAt} > ${now}`,
        or(eq(pieceSessions.status, "open"), and(eq(pieceSessions.status, "finishing"), lt(pieceSessions.leaseUntil, now))),
      ),
    )
    .returning();
  return row;
}

/** Ends a session: `consumed` once its file became an upload, `discarded` when it expired. */
export async function closePieceSession(db: Database, id: string, status: "consumed" | "discarded") {
  await db.batch([
    db.update(pieceSessions).set({ status, leaseUntil: null }).where(eq(pieceSessions.id, id)),
    db.delete(storedPieces).where(eq(storedPieces.sessionId, id)),
  ]);
}

/** A finish that failed gives the session back, pieces and all, for another try. */
export async function reopenPieceSession(db: Database, id: string) {
  await db.update(pieceSessions).set({ status: "open", leaseUntil: null }).where(and(eq(pieceSessions.id, id), eq(pieceSessions.status, "finishing")));
}

/** Sessions past their lifetime that still hold pieces (open, or finishing with a dead finisher). */
export function expiredPieceSessions(db: Database, now: number, limit: number) {
  return db
    .select({ id: pieceSessions.id })
    .from(pieceSessions)
    .where(
      and(
        lt(pieceSessions.expiresAt, now),
        or(eq(pieceSessions.status, "open"), and(eq(pieceSessions.status, "finishing"), lt(pieceSessions.leaseUntil, now))),
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
