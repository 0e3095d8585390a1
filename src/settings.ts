import { z } from "zod";
import { EXPIRES_IN_MAX, EXPIRES_IN_MIN, GiB } from "./model/spec-limits";
import type { Env } from "./env";
import type { Limits } from "./limits/rules";
import type { DefaultQuotas } from "./storage/usage";

// A var that is unset, malformed or out of range means its default: a typo in the configuration
// changes one setting and never fails requests. Secrets may be unset too (wrangler types them as
// strings all the same).

const numberWhere = (accept: (n: number) => boolean, fallback: number) =>
  z.coerce.number().refine(accept).catch(fallback);
const milliseconds = (fallbackSeconds: number) => numberWhere((n) => n > 0, fallbackSeconds).transform((s) => s * 1000);
const count = (fallback: number) => numberWhere((n) => Number.isInteger(n) && n > 0, fallback);
const text = z.string().catch("");
/** A quota: empty or unset for none (unlimited), else a whole number ≥ 0 (a malformed one: none). */
const quota = z
  .string()
  .trim()
  .regex(/^\d{1,15}$/)
  .transform(Number)
  .nullable()
  .catch(null);

const DEFAULT_DNS_RESOLVER = "https://cloudflare-dns.com/dns-query";

/** Shorter tokens are refused outright: the operator API must not rest on a guessable secret. */
const ADMIN_TOKEN_MIN_LENGTH = 32;

let warnedShortToken = false;

/** The token, or null when /admin is off: unset, or too short (said once in the log). */
const adminToken = z
  .string()
  .min(ADMIN_TOKEN_MIN_LENGTH)
  .nullable()
  .catch(({ value }) => {
    if (typeof value === "string" && value !== "" && !warnedShortToken) {
      warnedShortToken = true;
      console.error(
        JSON.stringify({
          admin:
            `ADMIN_TOKEN is shorter than ${ADMIN_TOKEN_MIN_LENGTH} characters, so /admin is off (404). ` +
            "Set a long random one: wrangler secret put ADMIN_TOKEN.",
        }),
      );
    }
    return null;
  });

/** The Worker's vars and secrets (wrangler.toml, .dev.vars.example), read into typed settings. */
const settingsSchema = z
  .object({
    PUBLIC_ORIGIN: z.string().trim().catch(""),
    ADMIN_TOKEN: adminToken,
    LINK_SIGNING_SECRET: text,
    MEDIA_SERVICE_URL: text,
    MEDIA_SECRET: text,
    MEDIA_RETRY_SECONDS: milliseconds(60),
    VIDEO_MINUTES_PER_DAY: count(60),
    LINK_TIMEOUT_SECONDS: milliseconds(120),
    DNS_RESOLVER_URL: z.string().min(1).catch(DEFAULT_DNS_RESOLVER),
    UNSAFE_ALLOW_LOOPBACK_LINKS: z
      .unknown()
      .optional()
      .transform((v) => v === "true"),
    EXPIRES_IN_MAX_SECONDS: numberWhere(
      (n) => Number.isInteger(n) && n >= EXPIRES_IN_MIN && n <= EXPIRES_IN_MAX,
      EXPIRES_IN_MAX,
    ),
    RATE_LIMITS: z
      .unknown()
      .optional()
      .transform((v) => v !== "off"),
    RATE_LIMIT_PER_MINUTE: count(20),
    RATE_LIMIT_FULL_KEY_PER_DAY: count(500),
    RATE_LIMIT_UPLOAD_KEY_PER_DAY: count(2000),
    RATE_LIMIT_IP_PER_DAY: count(2000),
    RATE_LIMIT_PIECES_PER_MINUTE: count(300),
    RATE_LIMIT_PIECE_BYTES_PER_DAY: count(4 * GiB),
    RATE_LIMIT_IP_PIECE_BYTES_PER_DAY: count(8 * GiB),
    RATE_LIMIT_BAD_KEY_PER_MINUTE: count(10),
    QUOTA_BYTES: quota,
    QUOTA_UPLOADS: quota,
    EDGE_MAX_BODY_BYTES: count(100_000_000),
    TRANSFORM_COPIES_PER_UPLOAD: count(200),
    TRANSFORM_BYTES_PER_UPLOAD: count(64 * 1024 * 1024),
  })
  .transform((vars) => ({
    /** Absolute origin for public URLs; empty means the request's origin. */
    publicOrigin: vars.PUBLIC_ORIGIN,
    adminToken: vars.ADMIN_TOKEN,
    /** Signs the short-lived links of locked uploads. */
    linkSigningSecret: vars.LINK_SIGNING_SECRET,
    /**
     * Largest expires_in accepted, 60 s to a year (the spec's machine-readable description says
     * 30 days, its prose a year).
     */
    expiresInMax: vars.EXPIRES_IN_MAX_SECONDS,
    /**
     * The largest request body Cloudflare's edge lets through to the Worker (100 MB on the Free and
     * Pro plans, 200 MB on Business): refused there with its own 413 before the Worker runs, and
     * here, on the declared Content-Length, so that `wrangler dev` and the tests refuse what a
     * deployment would.
     */
    edgeMaxBodyBytes: vars.EDGE_MAX_BODY_BYTES,
    /**
     * The transform copies (`src?w=&h=&fit=...`) one upload keeps at most, in number and bytes;
     * past either, the least recently served go (src/uploads/variants/variant-locks.ts).
     */
    transformCopyCap: { copies: vars.TRANSFORM_COPIES_PER_UPLOAD, bytes: vars.TRANSFORM_BYTES_PER_UPLOAD },
    /** Each account's quotas unless the operator set its own: null for none. */
    quotas: { bytes: vars.QUOTA_BYTES, uploads: vars.QUOTA_UPLOADS } satisfies DefaultQuotas,
    media: {
      /** Reach the media service at this URL instead of the container binding; empty for the binding. */
      serviceUrl: vars.MEDIA_SERVICE_URL,
      secret: vars.MEDIA_SECRET,
      /** Delay before the first retry of failed media work (doubling after). */
      retryBaseMs: vars.MEDIA_RETRY_SECONDS,
      /** Seconds of video whose HLS ladder an account's jobs may make in a UTC day. */
      videoSecondsPerDay: vars.VIDEO_MINUTES_PER_DAY * 60,
    },
    /** Downloads of `url` uploads. */
    links: {
      dnsResolverUrl: vars.DNS_RESOLVER_URL,
      allowLoopback: vars.UNSAFE_ALLOW_LOOPBACK_LINKS,
      timeoutMs: vars.LINK_TIMEOUT_SECONDS,
    },
    limits: {
      enabled: vars.RATE_LIMITS,
      perMinute: vars.RATE_LIMIT_PER_MINUTE,
      fullKeyPerDay: vars.RATE_LIMIT_FULL_KEY_PER_DAY,
      uploadKeyPerDay: vars.RATE_LIMIT_UPLOAD_KEY_PER_DAY,
      ipPerDay: vars.RATE_LIMIT_IP_PER_DAY,
      piecesPerMinute: vars.RATE_LIMIT_PIECES_PER_MINUTE,
      pieceBytesPerDay: vars.RATE_LIMIT_PIECE_BYTES_PER_DAY,
      ipPieceBytesPerDay: vars.RATE_LIMIT_IP_PIECE_BYTES_PER_DAY,
      badKeyPerMinute: vars.RATE_LIMIT_BAD_KEY_PER_MINUTE,
    } satisfies Limits,
  }));

export type Settings = z.output<typeof settingsSchema>;

// Once per env object, not on every read: the requests of an isolate are given the same one.
const parsed = new WeakMap<Env, Settings>();

export function settingsOf(env: Env): Settings {
  let settings = parsed.get(env);
  if (!settings) {
    settings = settingsSchema.parse(env);
    parsed.set(env, settings);
  }
  return settings;
}
