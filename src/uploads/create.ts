import { randomBase62, sha256Hex } from "../crypto";
import { unprocessable } from "../errors";
import { assertFreeOfTerms, textToModerate } from "../moderation/moderate";
import { readIntakeChecks } from "../storage/intake-checks";
import { chargeNewUpload, isQuotaViolation, type DefaultQuotas } from "../storage/usage";
import { readUsageAnswer, assertWithinQuota, refusedCharge, usageAgainst } from "../accounts/quotas";
import { writeUploadWithJob } from "../storage/media-jobs";
import { isFlaggedContent } from "../storage/moderation";
import type { UploadRow } from "../model/schema";
import { oneUploadEvents } from "../storage/webhook-outbox";
import { findDuplicate, uploadInsert } from "../storage/uploads";
import type { Stores } from "../storage/stores";
import type { Visibility } from "../model/visibility";
import type { StagedFile } from "./intake/staged-file";
import { cancelMediaJob, planMediaJob, processingPlanned } from "./media-jobs/jobs";
import { thumbnailInline } from "./inline-thumbnail";
import { focalColumns, focalOnVideo, type FocalPoint } from "./transforms/focal";
import { NO_PLACEHOLDER_YET } from "./placeholders";

export interface UploadOptions {
  expiresIn: number | null;
  allowDuplicate: boolean;
  keepOriginal: boolean;
  visibility: Visibility;
  title: string | null;
  description: string | null;
  /** Already hashed (access/passwords.ts). */
  passwordHash: string | null;
  maxViews: number | null;
  /** What `gravity=auto` crops around; an image's only. */
  focal: FocalPoint | null;
}

type CreateResult =
  | { duplicate: false; row: UploadRow; deleteToken: string; jobId: string | null }
  | { duplicate: true; row: UploadRow };

/** What an upload's row says of a newly stored file (until its media job fills in the rest). */
export function fileColumns(file: StagedFile) {
  return {
    type: file.media.type,
    objectKey: file.key,
    mime: file.media.mime,
    size: file.size,
    etag: file.etag,
    width: file.image?.width ?? null,
    height: file.image?.height ?? null,
    animated: file.animated,
    thumbKey: null,
    // Made with the thumbnail, of the thumbnail: a new file starts without either.
    ...NO_PLACEHOLDER_YET,
    contentHash: file.sha256,
  };
}

const flaggedContent = () => unprocessable("This content was previously flagged and cannot be uploaded.");

/** Flagged bytes are refused, whichever way they arrive. */
export async function assertNotFlagged(deps: Stores, file: StagedFile) {
  if (await isFlaggedContent(deps.db, file.sha256)) throw flaggedContent();
}

/**
 * The events of a new upload, in its row's batch: upload.created, and upload.ready when nothing
 * is left to make (no media job), so that every upload reaches ready or failed once. The id is
 * new: a row with it exists only if this insert made it (a duplicate's insert makes none).
 */
const creationEvents = (deps: Stores, id: string, ready: boolean, now: number) =>
  oneUploadEvents(deps.db, ready ? ["upload.created", "upload.ready"] : ["upload.created"], id, now);

/** Upload ids: 10 base62 characters (about 59 bits), short enough for share links. */
export const newUploadId = () => randomBase62(10);

/**
 * Records a staged file as a new upload, or answers with the account's existing upload of the
 * same bytes (spec: not for expiring uploads, not with allow_duplicate), whose answer leaves the
 * staged copy unused. Title and description are moderated, and flagged bytes refused, in that
 * order. The unique dedup index settles two identical uploads racing each other.
 *
 * A new upload is charged to the account's counters in the transaction that writes its row, on
 * condition that it fits its quotas (`quotas`: the configured defaults), so concurrent uploads
 * can never pass them together; one that cannot fit is a 413 and writes nothing (its staged
 * file is then the caller's to discard). A duplicate stores nothing new and is never refused.
 *
 * Two round trips to D1 in all: one batch reads what the upload is checked against, one writes
 * its media job, its row and its charge. A small image gets its thumbnail here and no media job.
 */
export async function createUpload(
  deps: Stores,
  input: { id: string; accountId: string; file: StagedFile; options: UploadOptions; quotas: DefaultQuotas },
): Promise<CreateResult> {
  const { db } = deps;
  const { id, accountId, file, options, quotas } = input;
  const dedup = options.expiresIn === null && !options.allowDuplicate;
  const text = { title: options.title, description: options.description };
  const checks = await readIntakeChecks(db, {
    accountId,
    contentHash: file.sha256,
    duplicate: dedup,
    blockedTerms: textToModerate(text).length > 0,
  });
  assertFreeOfTerms(checks.blockedTerms, text);
  if (checks.flagged) throw flaggedContent();
  if (checks.duplicate) return { duplicate: true, row: checks.duplicate };
  if (checks.usage) assertWithinQuota(usageAgainst(checks.usage, quotas), file.size);
  if (options.focal && file.media.type === "video") throw focalOnVideo();

  const now = deps.now();
  const deleteToken = randomBase62(32);
  const thumbnail = await thumbnailInline(deps, id, file, options.keepOriginal);
  const thumbKey = thumbnail?.thumbKey ?? null;
  const job = thumbKey === null ? planMediaJob(deps, id, file.key) : null;
  const row: UploadRow = {
    id,
    accountId,
    ...fileColumns(file),
    thumbKey,
    dedupHash: dedup ? file.sha256 : null,
    keepOriginal: options.keepOriginal,
    visibility: options.visibility,
    title: options.title,
    description: options.description,
    expiresAt: options.expiresIn === null ? null : now + options.expiresIn * 1000,
    filesRemovedAt: null,
    passwordHash: options.passwordHash,
    maxViews: options.maxViews,
    views: 0,
    deleteTokenHash: await sha256Hex(deleteToken),
    ...processingPlanned(job !== null, now),
    duration: null,
    ladder: null,
    ...focalColumns(options.focal),
    ...(thumbnail?.placeholder ?? NO_PLACEHOLDER_YET),
    createdAt: now,
    updatedAt: now,
  };
  // Left behind if this fails too: the cron job's sweep removes files no upload points at.
  const dropThumbnail = () => (thumbKey ? deps.bucket.delete(thumbKey).catch(() => {}) : undefined);
  const charge = chargeNewUpload(db, { accountId, uploadId: id, size: file.size, defaults: quotas });
  const inserted = await writeUploadWithJob(
    deps,
    job,
    uploadInsert(db, row),
    charge,
    creationEvents(deps, id, job === null, now),
  ).catch(async (error) => {
    await dropThumbnail();
    // Another upload of the account took the room since the check above.
    if (isQuotaViolation(error)) throw refusedCharge(await readUsageAnswer(db, accountId, quotas), file.size);
    throw error;
  });
  if (inserted.length > 0) return { duplicate: false, row, deleteToken, jobId: job?.id ?? null };

  await dropThumbnail();
  if (job) await cancelMediaJob(deps, job.id);
  const winner = await findDuplicate(db, accountId, file.sha256);
  if (!winner) throw new Error(`upload ${id} could not be inserted`);
  return { duplicate: true, row: winner };
}
