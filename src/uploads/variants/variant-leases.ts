import type { Env } from "../../env";
import type { Turn } from "./variant-locks";

/** What the making of a variant needs of the leases: one object per upload. */
export interface VariantLeases {
  take(name: string, leaseMs: number): Promise<Turn>;
  release(name: string, lease: number): Promise<void>;
}

/**
 * The leases of upload `uploadId`'s variants, held by its VariantLocks object (variant-locks.ts).
 * Kept apart from the class, which only the Worker's runtime can load.
 */
export function variantLeases(env: Env, uploadId: string): VariantLeases {
  const stub = env.VARIANT_LOCKS.get(env.VARIANT_LOCKS.idFromName(uploadId));
  return {
    take: (name, leaseMs) => stub.take(name, leaseMs),
    release: async (name, lease) => {
      await stub.release(name, lease);
    },
  };
}
