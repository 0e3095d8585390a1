import { and, eq, inArray, lt, sql } from "drizzle-orm";
import type { Database } from "./db";
import { mediaJobs, uploads, type MediaJobRow, type MediaType } from "../model/schema";
import { jobOutcome, type JobOutcome } from "./media-jobs";
import { chargeProcessedFile } from "./usage";
import type { ProcessedFile } from "./uploads";
import { batchWithEvents, uploadEvents, type DeliveryQueue } from "./webhook-outbox";

/*
 * An upload's processing state (its `processing` answer), written by its media job in the same
 * batch as the job's own writes. Every write is fenced on the upload still pointing at the job's
 * file, so the old job of a replaced upload never writes the new file's state, and (past the
 * claim) on the job's attempt still holding it, as the job's outcome is.
 */

type Deps = { db: Database; deliveries: DeliveryQueue };
type HeldJob = Pick<MediaJobRow, "id" | "uploadId" | "sourceKey" | "attempts">;

/** The upload of the job, while it points at the job's file. */
const uploadOf = (job: HeldJob) => and(eq(uploads.id, job.uploadId), eq(uploads.objectKey, job.sourceKey))!;

/** While the attempt `job` is the one holding the job (no other runner took it over). */
const heldBy = (job: HeldJob) =>
  sql`EXISTS (SELECT 1 FROM ${mediaJobs} WHERE ${mediaJobs.id} = ${job.id}
    AND ${mediaJobs.attempts} = ${job.attempts} AND ${mediaJobs.status} = 'running')`;

/** The figure the work reported while running (a video's conversion), with nothing else. */
export async function writeProgress(db: Database, job: HeldJob, percent: number, now: number) {
  await db
    .update(uploads)
    .set({ processingPercent: percent, processingUpdatedAt: now })
    .where(and(uploadOf(job), eq(uploads.processingState, "running"), heldBy(job)));
}

/** A failed attempt whose retry will come (or the service busy): "queued" again, with the job's outcome. */
export async function retryLater(db: Database, job: HeldJob, outcome: JobOutcome, now: number) {
  await db.batch([
    db
      .update(uploads)
      .set({ processingState: "queued", processingPercent: 0, processingError: null, processingUpdatedAt: now })
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
  words: Record<MediaType, string>,
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
        processingError: sql`CASE ${uploads.type} WHEN 'video' THEN ${words.video} ELSE ${words.image} END`,
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
 * own key would be swapped, and its upload.ready written, twice): its work is then "ready", and
 * its upload.ready event is written with it. Returns the row as it was.
 */
export async function swapUploadFile(deps: Deps, job: HeldJob, file: ProcessedFile, now: number) {
  const { db } = deps;
  const { uploadId: id, sourceKey } = job;
  const pointsAtSource = and(uploadOf(job), heldBy(job));
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
        processingState: "ready",
        processingPercent: 100,
        processingError: null,
        processingUpdatedAt: now,
        updatedAt: now,
      })
      .where(pointsAtSource)
      .returning({ id: uploads.id }),
    uploadEvents(db, "upload.ready", swapped, now),
  ])) as [(typeof uploads.$inferSelect)[], unknown, { id: string }[]];
  return before && after ? before : undefined;
}
