import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";
import { ApiError, unauthorized } from "../errors";
import { authenticate } from "../http/auth";
import { clientNetwork } from "../http/request-info";
import { settingsOf } from "../settings";
import { inAccountSession } from "../http/d1-sessions";
import { badKeyRule, listingRule, pieceByteRules, rulesFor } from "./rules";
import type { Rule } from "./gcra";
import type { BudgetState } from "./rate-limiter";

export const limiter = (c: Context<AppEnv>, name: string) => c.env.RATE_LIMITER.get(c.env.RATE_LIMITER.idFromName(name));

/** The budget closest to running out is the one a client needs to see. */
function setHeaders(c: Context<AppEnv>, budgets: BudgetState[]) {
  const tightest = budgets.reduce((a, b) => (b.remaining / b.rule.limit < a.remaining / a.rule.limit ? b : a));
  c.header("X-RateLimit-Limit", String(tightest.rule.limit));
  c.header("X-RateLimit-Remaining", String(tightest.remaining));
}

/** Whole seconds to wait, never 0: what Retry-After says. */
export const retryAfterSeconds = (waitMs: number) => Math.max(1, Math.ceil(waitMs / 1000));

function tooMany(budgets: BudgetState[]) {
  const seconds = retryAfterSeconds(Math.max(...budgets.map((b) => b.retryAfterMs)));
  const refused = budgets
    .filter((b) => b.retryAfterMs > 0)
    .map((b) => `${b.rule.label ?? b.rule.limit} per ${b.rule.periodMs >= 86_400_000 ? "day" : "minute"}`);
  return new ApiError(429, `Rate limit exceeded (${refused.join(", ")}). Retry in ${seconds} s.`, { "Retry-After": String(seconds) });
}

/**
 * Draws `cost` on the key's budgets, then the IP's; a request refused by either uses neither.
 * The X-RateLimit headers are set from these budgets when `headers` is on.
 */
async function limit(c: Context<AppEnv>, keyName: string, rules: { key: Rule[]; ip: Rule[] }, options: { cost?: number; headers?: boolean } = {}) {
  const { cost = 1, headers = true } = options;
  const now = c.var.now();
  const key = limiter(c, keyName);
  const taken = await key.take(rules.key, now, cost);
  let budgets = taken.budgets;
  let allowed = taken.allowed;
  if (allowed && rules.ip.length) {
    const ip = await limiter(c, `ip:${clientNetwork(c)}`).take(rules.ip, now, cost);
    if (!ip.allowed) {
      allowed = false;
      await key.giveBack(rules.key, now, cost);
      budgets = budgets.map((b) => ({ ...b, remaining: b.remaining + cost }));
    }
    budgets = [...budgets, ...ip.budgets];
  }
  if (headers) setHeaders(c, budgets);
  if (!allowed) throw tooMany(budgets);
  return taken.bookmark;
}

/**
 * Stores a piece of `bytes` bytes (`store`) if the key's and the IP's daily budgets of piece
 * bytes have room, charging them first; a piece refused for any reason (the budget, or `store`
 * failing) costs nothing. The X-RateLimit headers keep counting pieces, not bytes.
 */
export async function withPieceBytes<T>(c: Context<AppEnv>, bytes: number, store: () => Promise<T>): Promise<T> {
  const { limits } = settingsOf(c.env);
  if (!limits.enabled) return store();
  const rules = pieceByteRules(limits);
  await limit(c, `key:${c.var.caller.keyHash}`, rules, { cost: bytes, headers: false });
  try {
    return await store();
  } catch (error) {
    const now = c.var.now();
    await Promise.all([
      limiter(c, `key:${c.var.caller.keyHash}`).giveBack(rules.key, now, bytes),
      limiter(c, `ip:${clientNetwork(c)}`).giveBack(rules.ip, now, bytes),
    ]);
    throw error;
  }
}

/**
 * A public listing about to be made afresh, against the client IP's listingRule. No X-RateLimit
 * headers: the answer is kept in the colo's cache and given to other clients.
 */
export async function limitListing(c: Context<AppEnv>) {
  if (settingsOf(c.env).limits.enabled) await limit(c, `ip:${clientNetwork(c)}`, { key: [listingRule], ip: [] }, { headers: false });
}

/**
 * Every API request but the API description: the key is resolved (401 when missing or invalid,
 * those requests themselves throttled per IP) and the request is counted against the spec's
 * limits before anything else happens. Which key kind a route needs is the route's business.
 */
export const apiGate = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.path === "/api/openapi.json" || c.var.caller) return next();
  const { limits } = settingsOf(c.env);
  const caller = await authenticate(c);
  if (!caller) {
    if (limits.enabled) await limit(c, `ip:${clientNetwork(c)}`, { key: [badKeyRule(limits)], ip: [] });
    throw unauthorized();
  }
  c.set("caller", caller);
  const pieces = c.req.path === "/api/chunk";
  const noted = limits.enabled ? await limit(c, `key:${caller.keyHash}`, rulesFor(limits, pieces ? "pieces" : "api", caller.kind)) : null;
  // Pieces are never read back through the API: their writes need not be noted.
  const note = limits.enabled && !pieces ? (bookmark: string) => limiter(c, `key:${caller.fullKeyHash}`).noteBookmark(bookmark) : null;
  await inAccountSession(c, noted, note, next);
});
