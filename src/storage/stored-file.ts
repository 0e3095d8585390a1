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
