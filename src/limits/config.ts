import type { Env } from "../env";
import type { Rule } from "./gcra";

/** The spec's Limits table; each is a var because "limits may change". */
export interface Limits {
  enabled: boolean;
  perMinute: number;
  fullKeyPerDay: number;
  uploadKeyPerDay: number;
  ipPerDay: number;
  piecesPerMinute: number;
  /** Requests with a missing or invalid key, per IP: keys cannot be guessed at speed. */
  badKeyPerMinute: number;
}

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

const count = (value: string | undefined, fallback: number) => {
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? n : fallback;
};

export function limitsFrom(env: Env): Limits {
  return {
    enabled: (env.RATE_LIMITS ?? "on") !== "off",
    perMinute: count(env.RATE_LIMIT_PER_MINUTE, 20),
    fullKeyPerDay: count(env.RATE_LIMIT_FULL_KEY_PER_DAY, 500),
    uploadKeyPerDay: count(env.RATE_LIMIT_UPLOAD_KEY_PER_DAY, 2000),
    ipPerDay: count(env.RATE_LIMIT_IP_PER_DAY, 2000),
    piecesPerMinute: count(env.RATE_LIMIT_PIECES_PER_MINUTE, 300),
    badKeyPerMinute: count(env.RATE_LIMIT_BAD_KEY_PER_MINUTE, 10),
  };
}

export type Budget = "api" | "pieces";

/** The rules a request draws on, in the key's Durable Object and in the IP's. */
export function rulesFor(limits: Limits, budget: Budget, kind: "full" | "upload"): { key: Rule[]; ip: Rule[] } {
  // Pieces have their own budget; only the finishing POST /api counts toward the others.
  if (budget === "pieces") return { key: [{ name: "pieces-minute", limit: limits.piecesPerMinute, periodMs: MINUTE }], ip: [] };
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

export const badKeyRule = (limits: Limits): Rule => ({ name: "bad-key-minute", limit: limits.badKeyPerMinute, periodMs: MINUTE });
