import { ApiError } from "../../errors";
import { deleteObjects, deletePrefix, deletePreviousFiles, keysOf, type NamedFiles } from "../../storage/objects";
import type { UploadRow } from "../../model/schema";
import { everyVariantKey } from "../variants/plan";
import { ladderKeysOf, transformPrefix } from "../../storage/keys";

/**
 * The answer when a change is made but the files it left behind could not be removed (after
 * deleteObjects' retries): records of them elsewhere may serve them until they go stale, and
 * the cron job's sweep removes them.
 */
const notRemoved = (error: unknown) => {
  console.error(JSON.stringify({ removePrevious: String(error) }));
  return new ApiError(
    503,
    "The change is made, but its previous files could not be removed yet: they may be served for up to a minute more.",
  );
};

/** As deletePreviousFiles, for a change a client waits on: a failure is its 503 (notRemoved). */
export async function removePreviousFiles(bucket: R2Bucket, previous: NamedFiles): Promise<void> {
  await deletePreviousFiles(bucket, previous).catch((error) => Promise.reject(notRemoved(error)));
}

/**
 * Removes the files of deleted uploads, one or many; called once their rows are gone. What
 * records name goes, by name, in a few R2 calls of up to 1,000 keys each
 * (https://developers.cloudflare.com/r2/api/workers/workers-api-reference/, `delete`) rather than
 * a listing and a delete apiece: first each file and thumbnail, which must go (a 503 otherwise);
 * then every key a variant of each file can have (everyVariantKey) and its ladder's (named by
 * the row), after the files, so that a
 * variant stored meanwhile finds no file and removes itself (make.ts); then, for one upload, its
 * file's transform copies, which no name foretells, by listing them (transformPrefix). A batch's
 * (an album deleted with its uploads) are not listed, which would take a call per upload: its
 * rows are gone, so the orphan sweep removes them. Anything else under an
 * upload's prefix (left by an earlier crash, or a variant that could not be removed now) is named
 * by no row: the cron job's orphan sweep removes it.
 */
export async function removeFiles(bucket: R2Bucket, rows: UploadRow[]): Promise<void> {
  await deleteObjects(bucket, rows.flatMap(keysOf)).catch((error) => Promise.reject(notRemoved(error)));
  const derived = rows.flatMap((row) => [...everyVariantKey(row), ...ladderKeysOf(row)]);
  await deleteObjects(bucket, derived)
    .then(() => (rows.length === 1 ? deletePrefix(bucket, transformPrefix(rows[0]!.objectKey)) : undefined))
    .catch((error) =>
      console.error(JSON.stringify({ uploads: rows.map((row) => row.id), removeVariants: String(error) })),
    );
}

/**
 * Removes the files of several deleted uploads, each as removeFiles does, going on past one that
 * fails (after deleteObjects' retries): a file that cannot be removed must not keep the others
 * in storage. Returns the keys left behind. Records elsewhere may serve those for up to
 * RECORD_TTL_MS; no row points at them any more, so the cron job's orphan sweep removes them.
 */
export async function removeFilesOfEach(bucket: R2Bucket, rows: UploadRow[]): Promise<string[]> {
  const left: string[] = [];
  for (const row of rows) await removeFiles(bucket, [row]).catch(() => left.push(...keysOf(row)));
  return left;
}
