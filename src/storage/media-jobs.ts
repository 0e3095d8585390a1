import { and, eq, inArray, isNull, lt, lte, or, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "./db";
import { mediaJobs, uploads, type MediaJobRow } from "../model/schema";
import { live } from "../model/policy";
import { FILE_PHASE_PERCENT } from "../model/ladder";
import type { Outbox } from "./stores";
import { batchWithEvents, type BatchEntry } from "./webhook-outbox";

export interface NewMediaJob {
  id: string;
  uploadId: string;
  sourceKey: string;
  now: number;
  firstAttemptAt: number;
}

const mediaJobInsert = (db: Database, job: NewMediaJob) =>
  db
    .insert(mediaJobs)
    .values({
      id: job.id,
      uploadId: job.uploadId,
      sourceKey: job.sourceKey,
      nextAttemptAt: job.firstAttemptAt,
      createdAt: job.now,
      updatedAt: job.now,
    })
    .onConflictDoNothing();

/**
 * Runs `write` (the statement that points an upload at the job's file) with the job's row
 * inserted first, in one batch: one round trip, and one transaction, so no upload points at a
 * file without its job. `also` run after it, in the same transaction (the account's charge, the
 * change's webhook events). Resolves `write`'s result.
 */
export async function writeUploadWithJob<T extends BatchItem<"sqlite">>(
  deps: Outbox,
  job: NewMediaJob | null,
  write: T,
  ...also: BatchEntry[]
): Promise<T["_"]["result"]> {
  const first = job ? [mediaJobInsert(deps.db, job)] : [];
  const answers = await batchWithEvents(deps, [...first, write, ...also]);
  return answers[first.length] as T["_"]["result"];
}

export async function deleteMediaJob(db: Database, id: string) {
  await db.delete(mediaJobs).where(eq(mediaJobs.id, id));
}

/**
 * Takes the job if it is free (pending, or running with an expired lease) and has attempts
 * left: one conditional UPDATE, so two runners can never both hold it.
 */
const claim = (db: Database, id: string, now: number, leaseMs: number, maxAttempts: number) =>
  db
    .update(mediaJobs)
    .set({ status: "running", attempts: sql`${mediaJobs.attempts} + 1`, leaseUntil: now + leaseMs, updatedAt: now })
    .where(
      and(
        eq(mediaJobs.id, id),
        lt(mediaJobs.attempts, maxAttempts),
        or(
          // A job never tried yet is due at once for the runner its upload started (its
          // next_attempt_at is the cron job's grace); a tried one only once its retry is due.
          and(eq(mediaJobs.status, "pending"), or(isNull(mediaJobs.lastError), lte(mediaJobs.nextAttemptAt, now))),
          and(eq(mediaJobs.status, "running"), lt(mediaJobs.leaseUntil, now)),
        ),
      ),
    )
    .returning();

/**
 * The upload's work "running", in the claim's batch just after the claim: applies only when the
 * claim did (the job running with the lease and time this claim wrote), to its upload while it
 * points at the job's file (storage/upload-processing.ts has the job's other writes of the state).
 */
function runningAfterClaim(db: Database, id: string, now: number, leaseUntil: number) {
  const claimed = (column: typeof mediaJobs.uploadId | typeof mediaJobs.sourceKey | typeof mediaJobs.phase) =>
    db
      .select({ value: column })
      .from(mediaJobs)
      .where(
        and(
          eq(mediaJobs.id, id),
          eq(mediaJobs.status, "running"),
          eq(mediaJobs.leaseUntil, leaseUntil),
          eq(mediaJobs.updatedAt, now),
        ),
      );
  return db
    .update(uploads)
    .set({
      processingState: "running",
      // A ladder starts where its file's phase ended; a file's work has no figure until it reports one.
      processingPercent: sql`CASE WHEN 'ladder' IN ${claimed(mediaJobs.phase)} THEN ${FILE_PHASE_PERCENT} END`,
      processingError: null,
      processingUpdatedAt: now,
    })
    .where(
      and(inArray(uploads.id, claimed(mediaJobs.uploadId)), inArray(uploads.objectKey, claimed(mediaJobs.sourceKey))),
    );
}

/**
 * Claims a job, marks its upload's work running, and reads the upload, if live, in the same
 * transaction: one round trip for a job's first two steps. The upload is read whatever the
 * claim's outcome and returned only with a claimed job.
 */
export async function claimMediaJobWithUpload(
  db: Database,
  id: string,
  now: number,
  leaseMs: number,
  maxAttempts: number,
) {
  const jobUpload = db.select({ id: mediaJobs.uploadId }).from(mediaJobs).where(eq(mediaJobs.id, id));
  const [[job], , [upload]] = await db.batch([
    claim(db, id, now, leaseMs, maxAttempts),
    runningAfterClaim(db, id, now, now + leaseMs),
    db
      .select()
      .from(uploads)
      .where(and(inArray(uploads.id, jobUpload), live.where(now))),
  ]);
  return job ? { job, upload } : null;
}

export interface JobOutcome {
  status: "done" | "failed" | "pending";
  error?: string;
  nextAttemptAt?: number;
  attemptGivenBack?: boolean;
}

/**
 * One attempt of a job: its phase and its number within the phase (each phase counts its own),
 * and what it works on.
 */
export type HeldJob = Pick<MediaJobRow, "id" | "uploadId" | "sourceKey" | "phase" | "attempts">;
type AttemptOf = Pick<MediaJobRow, "id" | "phase" | "attempts">;

/** The row of the attempt `job`, whatever its status. */
const attemptRow = (job: AttemptOf) =>
  and(eq(mediaJobs.id, job.id), eq(mediaJobs.phase, job.phase), eq(mediaJobs.attempts, job.attempts))!;

/** While the attempt `job` is the one holding the job (no other runner took it over). */
export const heldBy = (job: AttemptOf) =>
  sql`EXISTS (SELECT 1 FROM ${mediaJobs} WHERE ${mediaJobs.id} = ${job.id} AND ${mediaJobs.phase} = ${job.phase}
    AND ${mediaJobs.attempts} = ${job.attempts} AND ${mediaJobs.status} = 'running')`;

/** The upload of the job, while it points at the job's file. */
export const uploadOf = (job: HeldJob) => and(eq(uploads.id, job.uploadId), eq(uploads.objectKey, job.sourceKey))!;

/** The outcome of the attempt `job` on its row; only the holder of this attempt may write it. */
export const jobOutcome = (db: Database, job: AttemptOf, outcome: JobOutcome, now: number) =>
  db
    .update(mediaJobs)
    .set({
      ...(outcome.attemptGivenBack ? { attempts: sql`${mediaJobs.attempts} - 1` } : {}),
      status: outcome.status,
      lastError: outcome.error ?? null,
      leaseUntil: null,
      ...(outcome.nextAttemptAt === undefined ? {} : { nextAttemptAt: outcome.nextAttemptAt }),
      updatedAt: now,
    })
    .where(attemptRow(job));

/** A job done (or obsolete): its outcome alone, as nothing is left to say of its upload. */
export async function finishMediaJob(db: Database, job: AttemptOf, now: number) {
  await jobOutcome(db, job, { status: "done" }, now);
}

/** Extends the lease of a job's attempt, while that attempt still holds it. */
export async function renewMediaJobLease(db: Database, job: MediaJobRow, now: number, leaseMs: number) {
  await db
    .update(mediaJobs)
    .set({ leaseUntil: now + leaseMs, updatedAt: now })
    .where(and(attemptRow(job), eq(mediaJobs.status, "running")));
}

/**
 * Why a job could not be claimed: "held" by another runner whose lease has not run out, "early"
 * (pending, its retry due in `dueInMs`), or "none" (finished, failed, or out of attempts).
 */
export async function unclaimedMediaJob(
  db: Database,
  id: string,
  now: number,
): Promise<{ state: "held" | "none" } | { state: "early"; dueInMs: number }> {
  const [job] = await db
    .select({ status: mediaJobs.status, leaseUntil: mediaJobs.leaseUntil, nextAttemptAt: mediaJobs.nextAttemptAt })
    .from(mediaJobs)
    .where(eq(mediaJobs.id, id));
  if (job?.status === "running" && (job.leaseUntil ?? 0) >= now) return { state: "held" };
  if (job?.status === "pending" && job.nextAttemptAt > now) return { state: "early", dueInMs: job.nextAttemptAt - now };
  return { state: "none" };
}

/** Jobs due for a (re)try: pending and due, or running with a lease that ran out. */
export async function dueMediaJobs(db: Database, now: number, maxAttempts: number, limit: number) {
  return db
    .select({
      id: mediaJobs.id,
      /** Since when it has been due: its next attempt's time, or its lease's end. */
      dueAt: sql<number>`CASE WHEN ${mediaJobs.status} = 'pending'
        THEN ${mediaJobs.nextAttemptAt} ELSE ${mediaJobs.leaseUntil} END`,
    })
    .from(mediaJobs)
    .where(
      and(
        lt(mediaJobs.attempts, maxAttempts),
        or(
          and(eq(mediaJobs.status, "pending"), lte(mediaJobs.nextAttemptAt, now)),
          and(eq(mediaJobs.status, "running"), lt(mediaJobs.leaseUntil, now)),
        ),
      ),
    )
    .orderBy(mediaJobs.nextAttemptAt)
    .limit(limit);
}

export async function mediaJobsOf(db: Database, uploadIds: string[]) {
  if (uploadIds.length === 0) return [];
  return db.select().from(mediaJobs).where(inArray(mediaJobs.uploadId, uploadIds));
}
