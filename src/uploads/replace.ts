import { and, eq } from "drizzle-orm";
import { ApiError, notFound } from "../errors";
import { uploads, type UploadRow } from "../model/schema";
import { changedJustBefore, uploadEvents } from "../storage/webhook-outbox";
import { writeUploadWithJob } from "../storage/media-jobs";
import { dedupSlotTaken, fileReplacement, findOwnedUpload } from "../storage/uploads";
import { assertNotFlagged, fileColumns } from "./create";
import type { Stores } from "../storage/stores";
import type { StagedFile } from "./intake/staged-file";
import { cancelMediaJob, planMediaJob, processingPlanned } from "./media-jobs/jobs";
import { unrestricted } from "../model/policy";
import { removePreviousFiles } from "./serving/previous-files";
import { chargeReplacement, isQuotaViolation, type DefaultQuotas } from "../storage/usage";
import { readUsageAnswer, refusedCharge } from "../accounts/quotas";

/** The spec's 409: a password-protected or view-limited upload keeps its file. */
export function assertReplaceable(upload: Pick<UploadRow, "passwordHash" | "maxViews">) {
  if (!unrestricted.of(upload)) {
    throw new ApiError(409, "This upload is password-protected or view-limited; its file cannot be replaced.");
  }
}

/**
 * Swaps the file behind an upload: id, page and links stay. The new file was stored under a new
 * name (staged), so until the one conditional UPDATE it is invisible and after it `src` serves
 * only the new file; then the previous file and thumbnail are removed. The new file gets the
 * same checks and conversions as a new upload (its media job), and takes over duplicate
 * detection for its bytes unless another upload of the account already answers for them.
 * If the previous files cannot be removed, `notRemoved` is the answer to give (a 503), once the
 * new file, which is in place, is kept. The account's bytes move from the previous file to the
 * new one in the same transaction; a larger file that would pass the byte quota (`quotas`: the
 * configured defaults) is a 413 and changes nothing.
 */
export async function replaceFile(
  deps: Stores,
  input: { accountId: string; id: string; file: StagedFile; keepOriginal: boolean; quotas: DefaultQuotas },
) {
  const { db, bucket } = deps;
  const { accountId, id, file, quotas } = input;
  const current = await findOwnedUpload(db, accountId, id, deps.now());
  if (!current) throw notFound("No upload with that id on this account.");
  assertReplaceable(current);
  await assertNotFlagged(deps, file);

  const dedup = current.expiresAt === null && !(await dedupSlotTaken(db, accountId, file.sha256, id));
  const job = planMediaJob(deps, id, file.key);
  const replacement = fileReplacement(
    db,
    id,
    current.objectKey,
    {
      ...fileColumns(file),
      dedupHash: dedup ? file.sha256 : null,
      keepOriginal: input.keepOriginal,
      // The new file's work starts over, whatever the previous file's stood at.
      ...processingPlanned(true, deps.now()),
    },
    deps.now(),
  );
  const charge = chargeReplacement(
    db,
    { accountId, uploadId: id, objectKey: file.key, previousSize: current.size, size: file.size },
    quotas,
  );
  // Right after the replacement: its event is written only if it applied (changedJustBefore).
  const replaced = uploadEvents(db, "upload.replaced", and(eq(uploads.id, id), changedJustBefore)!, deps.now());
  const [row] = await writeUploadWithJob(deps, job, replacement, replaced, charge).catch(async (error) => {
    if (isQuotaViolation(error)) {
      throw refusedCharge(await readUsageAnswer(db, accountId, quotas), file.size, current.size);
    }
    throw error;
  });
  if (!row) {
    await cancelMediaJob(deps, job.id);
    throw new ApiError(
      409,
      "The upload changed while it was being replaced (another replace, a delete, a password or a view limit).",
    );
  }
  // The upload points at the new file now: a failure from here on must not undo that, so the
  // caller gets it with the answer (a 503) and keeps the new file and starts its job all the same.
  // Records of the previous file are harmless once it is gone, so its removal is part of the answer.
  const notRemoved = await removePreviousFiles(bucket, current).then(
    () => null,
    (error: unknown) => error,
  );
  return { row, jobId: job.id, notRemoved };
}
