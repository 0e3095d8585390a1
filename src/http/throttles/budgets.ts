import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { ApiError } from "../../errors";
import { clientNetwork } from "../request-info";
import { settingsOf } from "../../settings";
import { badKeyRule, ceremonyRule, pieceByteRules } from "../../limits/rules";
import type { Rule } from "../../limits/gcra";
import { keyLimiter, networkLimiter } from "../../limits/limiters";
import type { BudgetState, RateLimiter } from "../../limits/rate-limiter";

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
  return new ApiError(429, `Rate limit exceeded (${refused.join(", ")}). Retry in ${seconds} s.`, {
    "Retry-After": String(seconds),
  });
}

/**
 * Draws `cost` on the budgets of `key` (a key's object, or the one a rule set is kept in) and on
 * the client network's at once (two objects, one round trip's wait); a request refused by either
 * uses neither (429): what the other took is given back. The X-RateLimit headers are set from
 * these budgets when `headers` is on. Returns the bookmark `key` keeps.
 */
export async function drawOn(
  c: Context<AppEnv>,
  key: DurableObjectStub<RateLimiter>,
  rules: { key: Rule[]; ip: Rule[] },
  options: { cost?: number; headers?: boolean } = {},
) {
  const { cost = 1, headers = true } = options;
  const now = c.var.now();
  const network = rules.ip.length ? networkLimiter(c.env, clientNetwork(c)) : null;
  const [taken, ip] = await Promise.all([key.take(rules.key, now, cost), network?.take(rules.ip, now, cost)]);
  const allowed = taken.allowed && (ip?.allowed ?? true);
  let budgets = [...taken.budgets, ...(ip?.budgets ?? [])];
  if (!allowed) {
    // Only a refused draw takes nothing; the other side's is returned, and shown as returned.
    const returned = new Set<BudgetState>();
    if (taken.allowed) {
      await key.giveBack(rules.key, now, cost);
      for (const b of taken.budgets) returned.add(b);
    }
    if (ip?.allowed && network) {
      await network.giveBack(rules.ip, now, cost);
      for (const b of ip.budgets) returned.add(b);
    }
    budgets = budgets.map((b) => (returned.has(b) ? { ...b, remaining: b.remaining + cost } : b));
  }
  if (headers) setHeaders(c, budgets);
  if (!allowed) throw tooMany(budgets);
  return taken.bookmark;
}

/** A request with a missing or invalid key, against its client network's budget of those. */
export async function countBadKey(c: Context<AppEnv>) {
  const { limits } = settingsOf(c.env);
  if (limits.enabled) await drawOn(c, networkLimiter(c.env, clientNetwork(c)), { key: [badKeyRule(limits)], ip: [] });
}

/**
 * A passkey ceremony begun (its challenge kept in D1), against the client network's budget of
 * them: on whatever RATE_LIMITS says, since anyone may begin one without a key.
 */
export async function drawCeremony(c: Context<AppEnv>) {
  await drawOn(c, networkLimiter(c.env, clientNetwork(c)), { key: [ceremonyRule], ip: [] }, { headers: false });
}

/**
 * Stores a piece of `bytes` bytes (`store`) if the key's and the IP's daily budgets of piece
 * bytes have room, charging them first; a piece refused by the budget costs nothing, nor one
 * whose `store` fails as `refunded` says (by default, any failure). The X-RateLimit headers keep
 * counting pieces, not bytes.
 */
export async function withPieceBytes<T>(
  c: Context<AppEnv>,
  bytes: number,
  store: () => Promise<T>,
  refunded: (error: unknown) => boolean = () => true,
): Promise<T> {
  const { limits } = settingsOf(c.env);
  if (!limits.enabled) return store();
  const rules = pieceByteRules(limits);
  await drawOn(c, keyLimiter(c.env, c.var.caller.keyHash), rules, { cost: bytes, headers: false });
  try {
    return await store();
  } catch (error) {
    if (!refunded(error)) throw error;
    const now = c.var.now();
    await Promise.all([
      keyLimiter(c.env, c.var.caller.keyHash).giveBack(rules.key, now, bytes),
      networkLimiter(c.env, clientNetwork(c)).giveBack(rules.ip, now, bytes),
    ]);
    throw error;
  }
}
