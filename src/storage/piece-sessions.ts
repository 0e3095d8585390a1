import { and, asc, eq, inArray, lt, or, sql } from "drizzle-orm";
import type { Database } from "./db";
import { chunkPieces, chunkSessions, type ChunkSessionRow } from "./schema";

/** Opens the session on its first piece; a session that exists already is left as it is. */
export async function openChunkSession(db: Database, session: Pick<ChunkSessionRow, "id" | "accountId" | "total" | "createdAt" | "expiresAt">) {
  await db.insert(chunkSessions).values(session).onConflictDoNothing();
  const [row] = await db.select().from(chunkSessions).where(eq(chunkSessions.id, session.id));
  return row!;
}

export async function findChunkSession(db: Database, id: string) {
  const [row] = await db.select().from(chunkSessions).where(eq(chunkSessions.id, id));
  return row;
}

/** Records a stored piece (replacing one of the same index) and returns the session's bytes so far. */
export async function recordPiece(db: Database, sessionId: string, index: number, size: number): Promise<number> {
  await db
    .insert(chunkPieces)
    .values({ sessionId, index, size })
    .onConflictDoUpdate({ target: [chunkPieces.sessionId, chunkPieces.index], set: { size } });
  const [row] = await db
    .select({ bytes: sql<number>`coalesce(sum(${chunkPieces.size}), 0)` })
    .from(chunkPieces)
    .where(eq(chunkPieces.sessionId, sessionId));
  return Number(row?.bytes ?? 0);
}

export async function forgetPiece(db: Database, sessionId: string, index: number) {
  await db.delete(chunkPieces).where(and(eq(chunkPieces.sessionId, sessionId), eq(chunkPieces.index, index)));
}

export function piecesOf(db: Database, sessionId: string) {
  return db.select().from(chunkPieces).where(eq(chunkPieces.sessionId, sessionId)).orderBy(asc(chunkPieces.index));
}

/**
 * Takes an open session for finishing (or one whose finisher died): one conditional UPDATE, so
 * two finishing requests can never both assemble it.
 */
export async function claimChunkSession(db: Database, id: string, accountId: string, now: number, leaseMs: number) {
  const [row] = await db
    .update(chunkSessions)
    .set({ status: "finishing", leaseUntil: now + leaseMs })
    .where(
      and(
        eq(chunkSessions.id, id),
        eq(chunkSessions.accountId, accountId),
        sql`${chunkSessions.expiresAt} > ${now}`,
        or(eq(chunkSessions.status, "open"), and(eq(chunkSessions.status, "finishing"), lt(chunkSessions.leaseUntil, now))),
      ),
    )
    .returning();
  return row;
}

/** Ends a session: `consumed` once its file became an upload, `discarded` when it expired. */
export async function closeChunkSession(db: Database, id: string, status: "consumed" | "discarded") {
  await db.batch([
    db.update(chunkSessions).set({ status, leaseUntil: null }).where(eq(chunkSessions.id, id)),
    db.delete(chunkPieces).where(eq(chunkPieces.sessionId, id)),
  ]);
}

/** A finish that failed gives the session back, pieces and all, for another try. */
export async function reopenChunkSession(db: Database, id: string) {
  await db.update(chunkSessions).set({ status: "open", leaseUntil: null }).where(and(eq(chunkSessions.id, id), eq(chunkSessions.status, "finishing")));
}

/** Sessions past their lifetime that still hold pieces (open, or finishing with a dead finisher). */
export function expiredChunkSessions(db: Database, now: number, limit: number) {
  return db
    .select({ id: chunkSessions.id })
    .from(chunkSessions)
    .where(
      and(
        lt(chunkSessions.expiresAt, now),
        or(eq(chunkSessions.status, "open"), and(eq(chunkSessions.status, "finishing"), lt(chunkSessions.leaseUntil, now))),
      ),
    )
    .limit(limit);
}

/** Tombstones old enough that no client still holds their upload_id. */
export async function purgeChunkTombstones(db: Database, before: number) {
  await db
    .delete(chunkSessions)
    .where(and(inArray(chunkSessions.status, ["consumed", "discarded"]), lt(chunkSessions.expiresAt, before)));
}
