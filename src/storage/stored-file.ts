/**
 * A stored file that a row points at. Files are removed only once nothing points at them, so
 * one that is missing is a broken invariant, not a user's error: the caller fails (a media job
 * then tries again later).
 */
export async function storedFile(bucket: R2Bucket, key: string, options: { range?: R2Range } = {}) {
  const object = await bucket.get(key, options);
  if (!object) throw new Error(`stored file ${key} is missing`);
  return object;
}

/** A stored file's first `length` bytes (all of them if it is shorter), and the whole file's size. */
export async function storedHead(bucket: R2Bucket, key: string, length: number) {
  const object = await storedFile(bucket, key, { range: { offset: 0, length } });
  return { bytes: new Uint8Array(await object.arrayBuffer()), size: object.size };
}

/**
 * Writes a file a media job makes, under a new key, listed in `written` as it is: the job
 * removes what it wrote if it fails before the upload points at it.
 */
export function putNewFile(
  bucket: R2Bucket,
  key: string,
  body: ReadableStream | Uint8Array | null,
  contentType: string,
  written: string[],
) {
  written.push(key);
  return bucket.put(key, body, { httpMetadata: { contentType } });
}
