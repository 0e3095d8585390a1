import type { UploadRow } from "../model/schema";
import { variantPrefix } from "./keys";

/** R2 deletes at most this many keys in one call. */
const DELETE_BATCH = 1000;
/** A delete is tried this many times, waiting RETRY_BASE_MS, then twice that, between tries. */
const DELETE_ATTEMPTS = 3;
const RETRY_BASE_MS = 50;

/**
 * Deletes `keys`, retrying transient failures: a removed file is what makes a remembered serving
 * record of it harmless (src/uploads/serving), so a failed delete is worth a second try. Throws
 * the last failure when every try failed.
 */
export async function deleteObjects(bucket: R2Bucket, keys: string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += DELETE_BATCH) {
    const batch = keys.slice(i, i + DELETE_BATCH);
    for (let attempt = 1; ; attempt++) {
      try {
        await bucket.delete(batch);
        break;
      } catch (error) {
        if (attempt >= DELETE_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, RETRY_BASE_MS * 2 ** (attempt - 1)));
      }
    }
  }
}

/**
 * Deletes `keys`, then every object under `prefix`, in as many calls as it takes. The named keys
 * go first, so that a listing that fails cannot keep them.
 */
export async function deletePrefix(bucket: R2Bucket, prefix: string, keys: string[] = []): Promise<void> {
  if (keys.length) await deleteObjects(bucket, keys);
  const rest: string[] = [];
  let cursor: string | undefined;
  do {
    const listing = await bucket.list({ prefix, cursor });
    for (const object of listing.objects) rest.push(object.key);
    cursor = listing.truncated ? listing.cursor : undefined;
  } while (cursor);
  if (rest.length) await deleteObjects(bucket, rest);
}

/** An upload's file and thumbnail, as a row names them. */
export type NamedFiles = Pick<UploadRow, "objectKey" | "thumbKey">;

export const keysOf = (files: NamedFiles) => [files.objectKey, files.thumbKey].filter((key): key is string => !!key);

/**
 * Deletes the files an upload pointed at before a change, then the variants made of its file;
 * called once the row points elsewhere (`current`, whose files are kept where the change kept a
 * key). The file goes first: a variant is stored only while its file is still there
 * (src/uploads/variants/make.ts), so one stored after this listing saw no file and removes itself.
 * Deleted with retries, since records of them are harmless only once they are gone; throws R2's
 * error when every try failed.
 */
export async function deletePreviousFiles(bucket: R2Bucket, previous: NamedFiles, current?: NamedFiles) {
  const kept = current ? keysOf(current) : [];
  await deleteObjects(
    bucket,
    keysOf(previous).filter((key) => !kept.includes(key)),
  );
  if (previous.objectKey !== current?.objectKey) await deletePrefix(bucket, variantPrefix(previous.objectKey));
}
