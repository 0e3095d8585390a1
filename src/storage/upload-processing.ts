import { and, eq, inArray, lt, sql } from "drizzle-orm";
import type { Database } from "./db";
import { mediaJobs, uploads, type MediaType } from "../model/schema";
import { heldBy, jobOutcome, uploadOf, type HeldJob, type JobOutcome } from "./media-jobs";
import { chargeProcessedFile } from "./usage";
import { ladderPhaseMove } from "./ladder-phase";
import { FILE_PHASE_PERCENT } from "../model/ladder";
import type { ProcessedFile } from "./uploads";
import { batchWithEvents, uploadEvents, type DeliveryQueue } from "./webhook-outbox";

/*
 * An upload's processing state (its `processing` answer), written by its media job in the same
 * batch as the job's own writes. Every write is fenced on the upload still pointing at the job's
 * file, so the old job of a replaced upload never writes the new file's state, and (past the
 * claim) on the job's attempt still holding it, as the job's outcome is.
 */

type Deps = { db: Database; deliveries: DeliveryQueue };

/** The figure the work reported while running (a video's conversion), with nothing else. */
export async function writeProgress(db: Database, job: HeldJob, percent: number, now: number) {
  await db
    .update(uploads)
    .set({ processingPercent: percent, processingUpdatedAt: now })
    .where(and(uploadOf(job), eq(uploads.processingState, "running"), heldBy(job)));
}

/**
 * A failed attempt whose retry will come (or the service busy, or the account's daily video
 * seconds spent): "queued" again, with the job's outcome, and `words` when the wait is the
 * owner's to know of (the daily limit).
 */
export async function retryLater(db: Database, job: HeldJob, outcome: JobOutcome, now: number, words?: string) {
  await db.batch([
    db
      .update(uploads)
      .set({
        processingState: "queued",
        processingPercent: 0,
        processingError: words ?? null,
        processingUpdatedAt: now,
      })
      .where(and(uploadOf(job), heldBy(job))),
    jobOutcome(db, job, outcome, now),
  ]);
}

/** The job failed for good: "failed" with `words` (for the upload's owner), its upload.failed event, its outcome. */
export async function failForGood(deps: Deps, job: HeldJob, error: string, words: string, now: number) {
  const { db } = deps;
  const failed = and(uploadOf(job), heldBy(job))!;
  await batchWithEvents(deps, [
    db
      .update(uploads)
      .set({ processingState: "failed", processingPercent: null, processingError: words, processingUpdatedAt: now })
      .where(failed),
    uploadEvents(db, "upload.failed", failed, now),
    jobOutcome(db, job, { status: "failed", error }, now),
  ]);
}

/**
 * Running jobs whose lease ran out with no attempts left have failed for good (the cron job):
 * their uploads "failed" with the words for their type, each with its upload.failed event, then
 * the jobs. The uploads are found through the jobs (by primary key), never by a scan.
 */
export async function failExhaustedMediaJobs(
  deps: Deps,
  now: number,
  maxAttempts: number,
  words: Record<MediaType | "ladder", string>,
) {
  const { db } = deps;
  const exhausted = and(
    eq(mediaJobs.status, "running"),
    lt(mediaJobs.leaseUntil, now),
    sql`${mediaJobs.attempts} >= ${maxAttempts}`,
  );
  const failing = and(
    inArray(uploads.id, db.select({ id: mediaJobs.uploadId }).from(mediaJobs).where(exhausted)),
    sql`EXISTS (SELECT 1 FROM ${mediaJobs} WHERE ${mediaJobs.uploadId} = ${uploads.id}
      AND ${mediaJobs.sourceKey} = ${uploads.objectKey} AND ${exhausted})`,
  )!;
  await batchWithEvents(deps, [
    db
      .update(uploads)
      .set({
        processingState: "failed",
        processingPercent: null,
        processingError: sql`CASE WHEN EXISTS (SELECT 1 FROM ${mediaJobs} WHERE ${mediaJobs.uploadId} = ${uploads.id}
          AND ${mediaJobs.sourceKey} = ${uploads.objectKey} AND ${mediaJobs.phase} = 'ladder' AND ${exhausted})
          THEN ${words.ladder} WHEN ${uploads.type} = 'video' THEN ${words.video} ELSE ${words.image} END`,
        processingUpdatedAt: now,
      })
      .where(failing),
    uploadEvents(db, "upload.failed", failing, now),
    db
      .update(mediaJobs)
      .set({
        status: "failed",
        lastError: sql`coalesce(${mediaJobs.lastError}, 'attempts exhausted')`,
        leaseUntil: null,
        updatedAt: now,
      })
      .where(exhausted),
  ]);
}

/**
 * Points the upload at a processed file, but only if it still points at the file the work
 * started from (it may have been replaced or deleted meanwhile) and the attempt `job` still holds
 * the job (a runner that lost its lease to another must not swap too: a file processed under its
 * own key would be swapped, and its upload.ready written, twice). An image's work is then
 * "ready", and its upload.ready event is written with it; a video's stays "running" (at
 * FILE_PHASE_PERCENT) and its job moves on to the ladder of the new file (ladderPhaseMove, due
 * for the cron job at `redriveAt`), whose end is the video's upload.ready. Any ladder of the old
 * file is no longer the upload's. Returns the row as it was.
 */
export async function swapUploadFile(deps: Deps, job: HeldJob, file: ProcessedFile, now: number, redriveAt: number) {
  const { db } = deps;
  const { uploadId: id, sourceKey } = job;
  const pointsAtSource = and(uploadOf(job), heldBy(job));
  const ladderNext = file.mime.startsWith("video/");
  // One batch, one transaction: nothing can change the row between the read and the update.
  // The account is charged what the file grew by (or given back what it shrank by), unrefused.
  // The event is about the row as the update left it: pointing at the new file, written now.
  const swapped = and(eq(uploads.id, id), eq(uploads.objectKey, file.objectKey), eq(uploads.updatedAt, now))!;
  const [[before], , [after]] = (await batchWithEvents(deps, [
    db.select().from(uploads).where(pointsAtSource),
    chargeProcessedFile(db, id, sourceKey, file.size, heldBy(job)),
    db
      .update(uploads)
      .set({
        ...file,
        ladder: null,
        processingState: ladderNext ? "running" : "ready",
        processingPercent: ladderNext ? FILE_PHASE_PERCENT : 100,
        processingError: null,
        processingUpdatedAt: now,
        updatedAt: now,
      })
      .where(pointsAtSource)
      .returning({ id: uploads.id }),
    ladderNext
      ? ladderPhaseMove(db, job, file.objectKey, now, redriveAt)
      : uploadEvents(db, "upload.ready", swapped, now),
  ])) as [(typeof uploads.$inferSelect)[], unknown, { id: string }[]];
  return before && after ? before : undefined;
}
