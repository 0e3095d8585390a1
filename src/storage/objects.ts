/** R2 deletes at most this many keys in one call. */
const DELETE_BATCH = 1000;

/** Deletes `keys` and every object under `prefix`, in as many calls as it takes. */
export async function deletePrefix(bucket: R2Bucket, prefix: string, keys: string[] = []): Promise<void> {
  const all = new Set(keys);
  let cursor: string | undefined;
  do {
    const listing = await bucket.list({ prefix, cursor });
    for (const object of listing.objects) all.add(object.key);
    cursor = listing.truncated ? listing.cursor : undefined;
  } while (cursor);
  const list = [...all];
  for (let i = 0; i < list.length; i += DELETE_BATCH) await bucket.delete(list.slice(i, i + DELETE_BATCH));
}
