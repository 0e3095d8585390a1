import type { UploadVariantLocks } from "../variants/lock-stubs";

/**
 * How often a stored transform copy's use is recorded, per key and isolate: the cap evicts the
 * least recently served copy, and a day-old copy served a minute ago or ten is no different, while
 * a write to the upload's object on every request would be one per image a page shows.
 */
export const TOUCH_EVERY_MS = 10 * 60_000;
/** Keys remembered per isolate at most: past it the oldest are forgotten (and touched again sooner). */
const REMEMBERED = 10_000;

const touched = new Map<string, number>();

/**
 * Records that copy `key` was served at `now`, unless this isolate did within TOUCH_EVERY_MS;
 * null when there is nothing to record (the caller runs the promise after its response).
 */
export function touchCopy(locks: UploadVariantLocks, key: string, now: number): Promise<void> | null {
  const last = touched.get(key);
  if (last !== undefined && now - last < TOUCH_EVERY_MS) return null;
  touched.delete(key);
  touched.set(key, now);
  if (touched.size > REMEMBERED) touched.delete(touched.keys().next().value!);
  return locks.touchCopy(key, now);
}
