import { ladderKey, newObjectKey } from "../../storage/keys";
import { ObjectWriter, type WrittenObject } from "../../storage/object-writer";
import type { MovedFiles } from "../../storage/uploads";
import type { UploadRow } from "../../model/schema";
import { putNewFile, storedFile } from "../../storage/stored-file";

/** A copy of a stored object under a new key of the same upload, streamed with bounded memory. */
async function copyObject(bucket: R2Bucket, uploadId: string, key: string, mime: string): Promise<WrittenObject> {
  const source = await storedFile(bucket, key);
  const writer = new ObjectWriter(bucket, newObjectKey(uploadId, key.slice(key.lastIndexOf(".") + 1)), {
    contentType: source.httpMetadata?.contentType ?? mime,
  });
  try {
    for await (const chunk of source.body) await writer.write(chunk);
    return await writer.finish();
  } catch (error) {
    await writer.abort();
    throw error;
  }
}

/**
 * Copies the ladder of the file `from` (its files named by `row.ladder`) to the ladder keys of
 * the file `to`, each streamed as a stream of its known length, listing each key in `written`.
 */
async function copyLadder(bucket: R2Bucket, row: UploadRow, to: string, written: string[]) {
  if (!row.ladder) return;
  const { id, files } = row.ladder;
  for (const file of files) {
    const source = await storedFile(bucket, ladderKey(row.objectKey, id, file.name));
    const sized = new FixedLengthStream(source.size);
    const [, stored] = await Promise.all([
      source.body.pipeTo(sized.writable),
      putNewFile(bucket, ladderKey(to, id, file.name), sized.readable, file.type, written),
    ]);
    if (!stored) throw new Error(`the ladder file ${file.name} was not copied`);
  }
}

/**
 * Copies the upload's file, thumbnail and ladder to new keys, so that once the row points at the copies
 * and the originals are removed, every record naming the originals leads to a missing object.
 * On failure nothing of the copies stays.
 */
export async function copyFiles(
  bucket: R2Bucket,
  row: UploadRow,
): Promise<{ files: MovedFiles; discard: () => Promise<void> }> {
  const written: string[] = [];
  const discard = () => bucket.delete(written).catch(() => {});
  try {
    const file = await copyObject(bucket, row.id, row.objectKey, row.mime);
    written.push(file.key);
    const thumb = row.thumbKey ? await copyObject(bucket, row.id, row.thumbKey, "image/webp") : null;
    if (thumb) written.push(thumb.key);
    // The ladder goes with its file (its keys are the file's): the row keeps naming it.
    await copyLadder(bucket, row, file.key, written);
    return { files: { objectKey: file.key, etag: file.etag, thumbKey: thumb?.key ?? null }, discard };
  } catch (error) {
    await discard();
    throw error;
  }
}
