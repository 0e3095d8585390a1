import { newObjectKey } from "../../storage/keys";
import { ObjectWriter, type WrittenObject } from "../../storage/object-writer";
import type { MovedFiles } from "../../storage/uploads";
import type { UploadRow } from "../../model/schema";
import { storedFile } from "../../storage/stored-file";

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
 * Copies the upload's file and thumbnail to new keys, so that once the row points at the copies
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
    return { files: { objectKey: file.key, etag: file.etag, thumbKey: thumb?.key ?? null }, discard };
  } catch (error) {
    await discard();
    throw error;
  }
}
