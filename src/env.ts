import type { KeyOwner } from "./storage/accounts";
import type { Database } from "./storage/db";

/** Bindings declared in wrangler.toml, plus secrets from .dev.vars / `wrangler secret put`. */
export interface Env {
  DB: D1Database;
  FILES: R2Bucket;
  /** Absolute origin for public URLs; empty means the request's origin. */
  PUBLIC_ORIGIN?: string;
  /** Enables /admin when set. */
  ADMIN_TOKEN?: string;
}

export type AppEnv = {
  Bindings: Env;
  Variables: {
    requestId: string;
    db: Database;
    /** Set by the API key middleware. */
    caller: KeyOwner;
  };
};
