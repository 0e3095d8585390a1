import { and, eq, inArray, sql } from "drizzle-orm";
import type { Database } from "./db";
import { mediaJobs, uploads, videoSeconds } from "../model/schema";
import type { StoredLadder } from "../model/ladder";
import { heldBy, jobOutcome, uploadOf, type HeldJob } from "./media-jobs";
import { batchWithEvents, uploadEvents, type DeliveryQueue } from "./webhook-outbox";

/*
 * A video's media job in its second phase, "ladder" (model/schema.ts, JOB_PHASES): the moves
 * into it, its charge against the account's daily video seconds, and the one UPDATE that makes
 * its ladder visible. Every write is fenced as the job's others are (upload-processing.ts).
 */

type Deps = { db: Database; deliveries: DeliveryQueue };

/**
 * The job moved on to its ladder phase, made of the file the first phase just stored: with a
 * fresh count of attempts (the ladder's failures say nothing of the file phase's, and the pair
 * of phase and attempts still names one attempt), pending, and due at once for the runner that
 * goes straight on to it; the cron job steps in only after `redriveAt`. Run in the swap's batch
 * after the swap, so it applies only when the swap did (the upload points at `fileKey`, written now).
 */
export const ladderPhaseMove = (db: Database, job: HeldJob, fileKey: string, now: number, redriveAt: number) =>
  db
    .update(mediaJobs)
    .set({
      phase: "ladder",
      sourceKey: fileKey,
      status: "pending",
      attempts: 0,
      leaseUntil: null,
      lastError: null,
      chargedDay: null,
      nextAttemptAt: redriveAt,
      updatedAt: now,
    })
    .where(
      and(
        eq(mediaJobs.id, job.id),
        eq(mediaJobs.phase, "file"),
        eq(mediaJobs.attempts, job.attempts),
        eq(mediaJobs.status, "running"),
        sql`EXISTS (SELECT 1 FROM ${uploads} WHERE ${uploads.id} = ${job.uploadId}
          AND ${uploads.objectKey} = ${fileKey} AND ${uploads.updatedAt} = ${now})`,
      ),
    );

/**
 * Charges `seconds` of video (at most `limit`) to the account's UTC `day`, if the day's total
 * stays within `limit` and the attempt `job` holds the job, and notes the day on the job in the same transaction, so a
 * job is charged once however often its ladder is tried. The note is written only when the
 * charge was (changes() of the statement just before). Whether the job is now charged.
 */
export async function chargeVideoSeconds(
  db: Database,
  job: HeldJob,
  accountId: string,
  seconds: number,
  day: number,
  limit: number,
): Promise<boolean> {
  // The day's first charge inserts its row (`seconds` within `limit` is the caller's check); a
  // later one adds to it only while the total stays within the limit and the attempt holds the job.
  const [, charged] = await db.batch([
    db
      .insert(videoSeconds)
      .values({ accountId, day, seconds })
      .onConflictDoUpdate({
        target: [videoSeconds.accountId, videoSeconds.day],
        set: { seconds: sql`${videoSeconds.seconds} + excluded.seconds` },
        setWhere: and(sql`${videoSeconds.seconds} + excluded.seconds <= ${limit}`, heldBy(job)),
      }),
    db
      .update(mediaJobs)
      .set({ chargedDay: day })
      .where(and(eq(mediaJobs.id, job.id), heldBy(job), sql`changes() = 1`))
      .returning({ day: mediaJobs.chargedDay }),
  ]);
  return charged.length === 1;
}

/**
 * The ladder stored: the upload names it (and its `length`, when it had none) and its work is
 * "ready", with its upload.ready event, and the job is done, in one batch, if the upload still
 * points at the file the ladder was made of and the attempt `job` still holds the job; `rest`
 * more seconds are charged to the day the job was charged to (a video whose length was learnt
 * from its ladder). "stored", or why not: "moved" (the upload points at another file, or is
 * gone: the ladder's files are no one's), "lost" (another attempt took the job over: the files
 * under these keys are that attempt's too).
 */
export async function storeLadder(
  deps: Deps,
  job: HeldJob,
  made: { ladder: StoredLadder; length: number | null; rest: number },
  now: number,
): Promise<"stored" | "moved" | "lost"> {
  const { db } = deps;
  const stored = and(eq(uploads.id, job.uploadId), eq(uploads.objectKey, job.sourceKey), eq(uploads.updatedAt, now))!;
  const chargedDay = db.select({ day: mediaJobs.chargedDay }).from(mediaJobs).where(eq(mediaJobs.id, job.id));
  const [[held], rows] = (await batchWithEvents(deps, [
    db.select({ held: sql<number>`${heldBy(job)}` }).from(sql`(SELECT 1)`),
    db
      .update(uploads)
      .set({
        ladder: made.ladder,
        duration: sql`coalesce(${uploads.duration}, ${made.length})`,
        processingState: "ready",
        processingPercent: 100,
        processingError: null,
        processingUpdatedAt: now,
        updatedAt: now,
      })
      .where(and(uploadOf(job), heldBy(job)))
      .returning({ id: uploads.id, accountId: uploads.accountId }),
    // Only when the update just before applied.
    db
      .update(videoSeconds)
      .set({ seconds: sql`${videoSeconds.seconds} + ${made.rest}` })
      .where(
        and(
          sql`${made.rest} > 0 AND changes() = 1`,
          inArray(videoSeconds.day, chargedDay),
          inArray(videoSeconds.accountId, db.select({ id: uploads.accountId }).from(uploads).where(stored)),
        ),
      ),
    uploadEvents(db, "upload.ready", stored, now),
    jobOutcome(db, job, { status: "done" }, now),
  ])) as [{ held: number }[], { id: string }[]];
  if (rows.length === 1) return "stored";
  return held?.held ? "moved" : "lost";
}
