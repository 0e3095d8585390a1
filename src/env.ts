import type { MediaContainer } from "./media/container";
import type { Caller } from "./http/auth";
import type { RateLimiter } from "./limits/rate-limiter";
import type { Database } from "./storage/db";

/** Bindings declared in wrangler.toml, plus secrets from .dev.vars / `wrangler secret put`. */
export interface Env {
  DB: D1Database;
  FILES: R2Bucket;
  /** Absolute origin for public URLs; empty means the request's origin. */
  PUBLIC_ORIGIN?: string;
  /** Enables /admin when set to 32 characters or more. */
  ADMIN_TOKEN?: string;
  /** The ffmpeg media service in production. */
  MEDIA_CONTAINER: DurableObjectNamespace<MediaContainer>;
  /** When set, the media service is reached at this URL instead (local dev, tests). */
  MEDIA_SERVICE_URL?: string;
  /** Shared secret between the Worker and the media service. */
  MEDIA_SECRET?: string;
  /** Delay before the first retry of failed media work, in seconds (doubling after). */
  MEDIA_RETRY_SECONDS?: string;
  /** Time limit of a `url` download, headers and body, in seconds (default 120). */
  LINK_TIMEOUT_SECONDS?: string;
  /** DNS-over-HTTPS endpoint (JSON form) used to check link hosts before downloading. */
  DNS_RESOLVER_URL?: string;
  /** "true" lets links reach loopback addresses. Unsafe: for a local test fixture server only. */
  UNSAFE_ALLOW_LOOPBACK_LINKS?: string;
  /** Signs the short-lived links of password-protected uploads (16+ characters). */
  LINK_SIGNING_SECRET?: string;
  /** Largest expires_in accepted, in seconds (60 to 31536000; default 31536000). */
  EXPIRES_IN_MAX_SECONDS?: string;
  /** One per API key, per client IP and per locked upload: the spec's rate limits and the guess throttles. */
  RATE_LIMITER: DurableObjectNamespace<RateLimiter>;
  /** "off" switches rate limiting off (benchmarks); anything else leaves it on. */
  RATE_LIMITS?: string;
  RATE_LIMIT_PER_MINUTE?: string;
  RATE_LIMIT_FULL_KEY_PER_DAY?: string;
  RATE_LIMIT_UPLOAD_KEY_PER_DAY?: string;
  RATE_LIMIT_IP_PER_DAY?: string;
  RATE_LIMIT_PIECES_PER_MINUTE?: string;
  /** Bytes of pieces per API key per day (default 4 GiB). */
  RATE_LIMIT_PIECE_BYTES_PER_DAY?: string;
  /** Bytes of pieces per client IP per day, across keys (default 8 GiB). */
  RATE_LIMIT_IP_PIECE_BYTES_PER_DAY?: string;
  RATE_LIMIT_BAD_KEY_PER_MINUTE?: string;
}

export type AppEnv = {
  Bindings: Env;
  Variables: {
    requestId: string;
    db: Database;
    /** Set by the API gate. */
    caller: Caller;
    /** The clock of rate limits (tests inject their own). */
    now: () => number;
  };
};
