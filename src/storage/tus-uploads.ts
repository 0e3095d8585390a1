import { and, eq, isNull, lt, or, sql } from "drizzle-orm";
import type { Database } from "./db";
import { pieceSessions, tusUploads, type PieceSessionRow, type TusUploadRow } from "../model/schema";

/** Opens a tus upload with the piece session its bytes become pieces of, in one round trip. */
export async function openTusUpload(
  db: Database,
  session: Pick<PieceSessionRow, "id" | "accountId" | "total" | "createdAt" | "expiresAt">,
  upload: Pick<TusUploadRow, "length" | "metadata" | "fields" | "uploadId">,
) {
  await db.batch([
    db.insert(pieceSessions).values({ ...session, sender: "tus" }),
    db.insert(tusUploads).values({
      id: session.id,
      accountId: session.accountId,
      createdAt: session.createdAt,
      expiresAt: session.expiresAt,
      ...upload,
    }),
  ]);
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
 * Takes the right to write the upload's bytes for `leaseMs` (or renews it, for its holder): one
 * conditional UPDATE, so two requests never write at once. Null when another holds it, or the
 * upload has ended.
 */
export async function takeTusWriter(db: Database, id: string, writer: string, now: number, leaseMs: number) {
  const [row] = await db
    .update(tusUploads)
    .set({ writer, writerUntil: now + leaseMs })
    .where(
      and(
        eq(tusUploads.id, id),
        isNull(tusUploads.ended),
        or(eq(tusUploads.writer, writer), isNull(tusUploads.writerUntil), lt(tusUploads.writerUntil, now)),
      ),
    )
    .returning();
  return row ?? null;
}

export async function releaseTusWriter(db: Database, id: string, writer: string) {
  await db
    .update(tusUploads)
    .set({ writer: null, writerUntil: null })
    .where(and(eq(tusUploads.id, id), eq(tusUploads.writer, writer)));
}

/**
 * The writer's progress: bytes up to `offset` are stored. Only the lease's holder moves it; false
 * when the lease was lost meanwhile.
 */
export async function setTusOffset(db: Database, id: string, writer: string, offset: number): Promise<boolean> {
  const rows = await db
    .update(tusUploads)
    .set({ offset })
    .where(and(eq(tusUploads.id, id), eq(tusUploads.writer, writer), isNull(tusUploads.ended)))
    .returning({ id: tusUploads.id });
  return rows.length > 0;
}

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

/** Tus uploads of the account, unfinished and within their lifetime: what it has open. */
export async function openTusUploads(db: Database, accountId: string, now: number): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)` })
    .from(tusUploads)
    .where(and(eq(tusUploads.accountId, accountId), isNull(tusUploads.ended), sql`${tusUploads.expiresAt} > ${now}`));
  return Number(row?.n ?? 0);
}
