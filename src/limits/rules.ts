import { GiB, MiB } from "../model/spec-limits";
import type { GuessRule } from "./backoff";
import type { Rule } from "./gcra";

/** The spec's Limits table; each is a var (RATE_LIMIT_*) because "limits may change". */
export interface Limits {
  enabled: boolean;
  perMinute: number;
  fullKeyPerDay: number;
  uploadKeyPerDay: number;
  ipPerDay: number;
  piecesPerMinute: number;
  /**
   * Bytes of pieces per key and per IP a day: unfinished pieces stay stored for up to 2 hours,
   * so the count of pieces alone would let one key park gigabytes a minute.
   */
  pieceBytesPerDay: number;
  ipPieceBytesPerDay: number;
  /** Requests with a missing or invalid key, per IP: keys cannot be guessed at speed. */
  badKeyPerMinute: number;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

export type Budget = "api" | "pieces";

/** The rules a request draws on, in the key's Durable Object and in the IP's. */
export function rulesFor(limits: Limits, budget: Budget, kind: "full" | "upload"): { key: Rule[]; ip: Rule[] } {
  // Pieces have their own budget; only the finishing POST /api counts toward the others.
  if (budget === "pieces")
    return { key: [{ name: "pieces-minute", limit: limits.piecesPerMinute, periodMs: MINUTE }], ip: [] };
  return {
    key: [
      { name: "minute", limit: limits.perMinute, periodMs: MINUTE },
      kind === "full"
        ? { name: "day-full", limit: limits.fullKeyPerDay, periodMs: DAY }
        : { name: "day-upload", limit: limits.uploadKeyPerDay, periodMs: DAY },
    ],
    ip: [{ name: "day", limit: limits.ipPerDay, periodMs: DAY }],
  };
}

export const badKeyRule = (limits: Limits): Rule => ({
  name: "bad-key-minute",
  limit: limits.badKeyPerMinute,
  periodMs: MINUTE,
});

/**
 * Public listings (gallery pages, sitemap pages, the feed) made afresh for one IP, when the
 * colo's cache has no copy: 60 a minute. A person paging through the gallery or a crawler taking
 * a sitemap page a second never waits; a client asking for page after page that nobody asked for
 * recently, or sending credentials to get past the cache, makes the database read no more than
 * a page a second for it.
 */
export const listingRule: Rule = { name: "listings-minute", limit: 60, periodMs: MINUTE };

/**
 * Variants made for one IP (src/uploads/variants): 60 a minute. A page of a gallery or a
 * srcset asks for a few at once, and a variant is made once for everyone; a client walking
 * through every upload's every width makes the encoders work no faster than one a second for it.
 */
export const variantRule: Rule = { name: "variants-minute", limit: 60, periodMs: MINUTE };

/** "4 GiB", "5 MiB" or "1000 bytes": how a refusal names a budget of bytes. */
function bytesLabel(bytes: number): string {
  for (const [unit, size] of [
    ["GiB", GiB],
    ["MiB", MiB],
  ] as const) {
    if (bytes % size === 0) return `${bytes / size} ${unit}`;
  }
  return `${bytes} bytes`;
}

/** Bytes of pieces, charged to the key's Durable Object and the IP's, each piece its size. */
export function pieceByteRules(limits: Limits): { key: Rule[]; ip: Rule[] } {
  const rule = (name: string, limit: number): Rule => ({
    name,
    limit,
    periodMs: DAY,
    label: `${bytesLabel(limit)} of pieces`,
  });
  return {
    key: [rule("piece-bytes-day", limits.pieceBytesPerDay)],
    ip: [rule("piece-bytes-day", limits.ipPieceBytesPerDay)],
  };
}

/**
 * Passwords given on a locked upload's page, checked before PBKDF2 runs. Per upload and client:
 * 5 free, then 1 s, 2 s, 4 s... up to 15 minutes (a right password starts afresh). Per upload
 * across clients (guessing from many addresses): 20 free, the same waits. Per client across
 * uploads: 30 free, then up to an hour. One wrong guess is forgotten per hour without a guess.
 * The two limiters' names: the upload's Durable Object and the IP's.
 */
export function passwordRules(ip: string): { upload: GuessRule[]; ip: GuessRule[] } {
  const backoff = { baseMs: SECOND, decayMs: HOUR };
  return {
    upload: [
      { name: `password:${ip}`, free: 5, capMs: 15 * MINUTE, onSuccess: "reset", ...backoff },
      { name: "password", free: 20, capMs: 15 * MINUTE, onSuccess: "withdraw", ...backoff },
    ],
    ip: [{ name: "password", free: 30, capMs: HOUR, onSuccess: "withdraw", ...backoff }],
  };
}

/** Wrong admin tokens per IP: 5 free, then 1 s, 2 s, 4 s... up to an hour. */
export const adminTokenRule: GuessRule = {
  name: "admin-token",
  free: 5,
  baseMs: SECOND,
  capMs: HOUR,
  decayMs: HOUR,
  onSuccess: "reset",
};

/**
 * Sign-ins to the dashboard that prove no passkey, per client network: as wrong admin tokens, 5
 * free, then waits doubling from a second up to an hour; a sign-in that works takes back its own
 * count only (a network's other failed attempts stay counted).
 */
export const signInRule: GuessRule = {
  name: "sign-in",
  free: 5,
  baseMs: SECOND,
  capMs: HOUR,
  decayMs: HOUR,
  onSuccess: "withdraw",
};

/**
 * Passkey ceremonies begun per client network (each keeps a challenge in D1 for five minutes):
 * 30 a minute, far more than a person signing in or adding passkeys needs.
 */
export const ceremonyRule: Rule = { name: "ceremonies-minute", limit: 30, periodMs: MINUTE };
