import type { Env } from "../../env";
import type { CopyCap, Turn } from "./variant-locks";

/** The locks of one upload's variants, as the making of a variant takes them under a lease. */
export interface UploadVariantLocks {
  take(name: string, leaseMs: number, options: { file: string; maxLeads: number }): Promise<Turn>;
  release(name: string, lease: number): Promise<void>;
  /**
   * Ends the lease and remembers that `name` (or, with `file`, every variant of that file) cannot
   * be made: for good, or for `forMs`.
   */
  fail(name: string, lease: number, message: string, options?: { file?: string; forMs?: number }): Promise<void>;
  /** The time a poster of `file` at `at` ms is made at: `at`, or the nearest kept one past `max` times. */
  posterTime(file: string, at: number, max: number): Promise<number>;
  /** Records a stored transform copy; answers the copies to delete to keep within `cap` (variant-locks.ts). */
  keepCopy(key: string, bytes: number, prefix: string, cap: CopyCap): Promise<string[]>;
  /** A stored transform copy was served at `at`. */
  touchCopy(key: string, at: number): Promise<void>;
}

/**
 * The media service's share for variants: a slot held while one variant is made there, so that
 * variants never take more of the service than `slots` calls at once and media jobs always find
 * room, and one client (`holder`, its network) holds at most one slot at a time. Null when every
 * slot is taken, or the client holds one already.
 */
export interface ServiceShare {
  take(leaseMs: number, holder: string): Promise<{ release(): Promise<void> } | null>;
}

/**
 * The locks of upload `uploadId`'s variants: its VariantLocks object (variant-locks.ts).
 * Kept apart from the class, which only the Worker's runtime can load.
 */
export function variantLocks(env: Env, uploadId: string): UploadVariantLocks {
  const stub = env.VARIANT_LOCKS.get(env.VARIANT_LOCKS.idFromName(uploadId));
  return {
    take: (name, leaseMs, options) => stub.take(name, leaseMs, options),
    release: (name, lease) => stub.release(name, lease),
    fail: (name, lease, message, options) => stub.fail(name, lease, message, options),
    posterTime: (file, at, max) => stub.posterTime(file, at, max),
    keepCopy: (key, bytes, prefix, cap) => stub.keepCopy(key, bytes, prefix, cap),
    touchCopy: (key, at) => stub.touchCopy(key, at),
  };
}

/** The object that holds the service share's slots: one for the whole service. */
const SHARE_OBJECT = "media-service-share";

export function serviceShare(env: Env, slots: number): ServiceShare {
  const stub = env.VARIANT_LOCKS.get(env.VARIANT_LOCKS.idFromName(SHARE_OBJECT));
  const names = Array.from({ length: slots }, (_, i) => `slot ${i + 1}`);
  return {
    async take(leaseMs, holder) {
      const slot = await stub.tryTake(names, leaseMs, holder);
      return slot && { release: () => stub.release(slot.name, slot.lease) };
    },
  };
}
