import { and, eq, isNull, lt, or, sql } from "drizzle-orm";
import type { Database } from "./db";
import { pieceSessions, tusUploads, type PieceSessionRow, type TusUploadRow } from "../model/schema";

/**
 * Opens a tus upload with the piece session its bytes become pieces of, in one round trip, unless
 * the account already has `maxOpen` unfinished ones: the count and the inserts are one
 * transaction, so concurrent creations never pass it. False when refused.
 */
export async function openTusUpload(
  db: Database,
  session: Pick<PieceSessionRow, "id" | "accountId" | "total" | "createdAt" | "expiresAt">,
  upload: Pick<TusUploadRow, "length" | "metadata" | "fields" | "uploadId">,
  maxOpen: number,
): Promise<boolean> {
  const { id, accountId, createdAt } = session;
  const [, , , , [row]] = await db.batch([
    db.insert(pieceSessions).values({ ...session, sender: "tus" }),
    db.insert(tusUploads).values({ id, accountId, createdAt, expiresAt: session.expiresAt, ...upload }),
    // One transaction: the count sees every upload another creation committed, and this one.
    db.delete(tusUploads).where(
      and(
        eq(tusUploads.id, id),
        sql`(SELECT count(*) FROM tus_uploads AS open WHERE open.account_id = ${accountId}
               AND open.ended IS NULL AND open.expires_at > ${createdAt}) > ${maxOpen}`,
      ),
    ),
    db
      .delete(pieceSessions)
      .where(and(eq(pieceSessions.id, id), sql`NOT EXISTS (SELECT 1 FROM tus_uploads WHERE id = ${id})`)),
    db.select({ id: tusUploads.id }).from(tusUploads).where(eq(tusUploads.id, id)),
  ]);
  return row !== undefined;
}

export async function findTusUpload(db: Database, id: string): Promise<TusUploadRow | undefined> {
  const [row] = await db.select().from(tusUploads).where(eq(tusUploads.id, id));
  return row;
}

/** The upload with its piece session's state: whether its file was made into an upload, and under which id. */
export async function findTusUploadAndSession(db: Database, id: string) {
  const [row] = await db
    .select({
      upload: tusUploads,
      sessionStatus: pieceSessions.status,
      reservedUploadId: pieceSessions.fileUploadId,
    })
    .from(tusUploads)
    .innerJoin(pieceSessions, eq(pieceSessions.id, tusUploads.id))
    .where(eq(tusUploads.id, id));
  return row;
}

/**
 * Takes the right to write the upload's bytes for `leaseMs`: one conditional UPDATE, so two
 * requests never write at once. Null when another holds it, or the upload has ended. The
 * writer's id is its fencing token: every later write of the upload's state names it.
 */
export async function takeTusWriter(db: Database, id: string, writer: string, now: number, leaseMs: number) {
  const [row] = await db
    .update(tusUploads)
    .set({ writer, writerUntil: now + leaseMs })
    .where(
      and(
        eq(tusUploads.id, id),
        isNull(tusUploads.ended),
        or(isNull(tusUploads.writerUntil), lt(tusUploads.writerUntil, now)),
      ),
    )
    .returning();
  return row ?? null;
}

/**
 * Extends the lease of its holder only: a writer whose lease another took, even one let go
 * since, never gets it back (it would write from an offset that is no longer the upload's).
 */
export async function renewTusWriter(db: Database, id: string, writer: string, now: number, leaseMs: number) {
  const rows = await db
    .update(tusUploads)
    .set({ writerUntil: now + leaseMs })
    .where(and(eq(tusUploads.id, id), eq(tusUploads.writer, writer), isNull(tusUploads.ended)))
    .returning({ id: tusUploads.id });
  return rows.length > 0;
}

export async function releaseTusWriter(db: Database, id: string, writer: string) {
  await db
    .update(tusUploads)
    .set({ writer: null, writerUntil: null })
    .where(and(eq(tusUploads.id, id), eq(tusUploads.writer, writer)));
}

/** A tail fragment: an object holding the file's bytes from `start`, `size` of them. */
export interface TailFragment {
  key: string;
  start: number;
  size: number;
}

/**
 * The writer's progress: bytes up to `offset` are stored, those past the last piece in `tail`.
 * A compare-and-set fenced by the lease: only its holder moves the offset, and only from where
 * it read it (`from`); false when the lease was lost meanwhile, and then nothing changed.
 */
export async function setTusOffset(
  db: Database,
  id: string,
  writer: string,
  from: number,
  offset: number,
  tail: TailFragment[],
): Promise<boolean> {
  const rows = await db
    .update(tusUploads)
    .set({ offset, tail: JSON.stringify(tail) })
    .where(
      and(eq(tusUploads.id, id), eq(tusUploads.writer, writer), eq(tusUploads.offset, from), isNull(tusUploads.ended)),
    )
    .returning({ id: tusUploads.id });
  return rows.length > 0;
}

/** The condition a tus writer's storage statements carry: the lease still its own, the offset as it read it. */
export interface TusFence {
  writer: string;
  offset: number;
}

export const fenceHolds = (id: string, fence: TusFence) =>
  sql`EXISTS (SELECT 1 FROM tus_uploads WHERE id = ${id} AND writer = ${fence.writer}
              AND "offset" = ${fence.offset} AND ended IS NULL)`;

/**
 * The length of an upload created without one, set once by its writer, with its piece session's
 * count of pieces.
 */
export async function setTusLength(db: Database, id: string, writer: string, length: number, pieces: number) {
  // One batch, so the upload's length and its session's count of pieces never disagree.
  const [[row]] = await db.batch([
    db
      .update(tusUploads)
      .set({ length })
      .where(and(eq(tusUploads.id, id), eq(tusUploads.writer, writer), isNull(tusUploads.length)))
      .returning({ id: tusUploads.id }),
    db
      .update(pieceSessions)
      .set({ total: pieces })
      .where(
        and(
          eq(pieceSessions.id, id),
          sql`EXISTS (SELECT 1 FROM tus_uploads WHERE id = ${id} AND length = ${length} AND writer = ${writer})`,
        ),
      ),
  ]);
  return row !== undefined;
}

/** How the upload ended, for good: every later request is answered from this. */
export async function endTusUpload(
  db: Database,
  id: string,
  ending: Pick<TusUploadRow, "ended" | "uploadId" | "failure"> & { offset?: number },
) {
  await db
    .update(tusUploads)
    .set({ ...ending, writer: null, writerUntil: null })
    .where(and(eq(tusUploads.id, id), isNull(tusUploads.ended)));
}

/**
 * The bytes the account's open tus uploads (but `exceptId`) hold or will: each one's length, or
 * while that is deferred its offset. They count against the byte quota while open.
 */
export async function openTusBytes(db: Database, accountId: string, now: number, exceptId = ""): Promise<number> {
  const [row] = await db
    .select({ bytes: sql<number>`coalesce(sum(coalesce(${tusUploads.length}, ${tusUploads.offset})), 0)` })
    .from(tusUploads)
    .where(
      and(
        eq(tusUploads.accountId, accountId),
        isNull(tusUploads.ended),
        sql`${tusUploads.expiresAt} > ${now}`,
        sql`${tusUploads.id} <> ${exceptId}`,
      ),
    );
  return Number(row?.bytes ?? 0);
}
