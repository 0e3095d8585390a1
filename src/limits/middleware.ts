import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";
import { ApiError, unauthorized } from "../errors";
import { authenticate } from "../http/auth";
import { clientIp } from "../http/request-info";
import { badKeyRule, limitsFrom, rulesFor } from "./config";
import type { Rule } from "./gcra";
import type { BudgetState } from "./rate-limiter";

const limiter = (c: Context<AppEnv>, name: string) => c.env.RATE_LIMITER.get(c.env.RATE_LIMITER.idFromName(name));

/** The budget closest to running out is the one a client needs to see. */
function setHeaders(c: Context<AppEnv>, budgets: BudgetState[]) {
  const tightest = budgets.reduce((a, b) => (b.remaining / b.rule.limit < a.remaining / a.rule.limit ? b : a));
  c.header("X-RateLimit-Limit", String(tightest.rule.limit));
  c.header("X-RateLimit-Remaining", String(tightest.remaining));
}

function tooMany(budgets: BudgetState[]) {
  const waitMs = Math.max(...budgets.map((b) => b.retryAfterMs));
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  const refused = budgets.filter((b) => b.retryAfterMs > 0).map((b) => `${b.rule.limit} per ${b.rule.periodMs >= 86_400_000 ? "day" : "minute"}`);
  return new ApiError(429, `Rate limit exceeded (${refused.join(", ")}). Retry in ${seconds} s.`, { "Retry-After": String(seconds) });
}

/** Draws on the key's budgets, then the IP's; a request refused by either uses neither. */
async function limit(c: Context<AppEnv>, keyName: string, rules: { key: Rule[]; ip: Rule[] }) {
  const now = c.var.now();
  const key = limiter(c, keyName);
  const taken = await key.take(rules.key, now);
  let budgets = taken.budgets;
  let allowed = taken.allowed;
  if (allowed && rules.ip.length) {
    const ip = await limiter(c, `ip:${clientIp(c)}`).take(rules.ip, now);
    if (!ip.allowed) {
      allowed = false;
      await key.giveBack(rules.key, now);
      budgets = budgets.map((b) => ({ ...b, remaining: b.remaining + 1 }));
    }
    budgets = [...budgets, ...ip.budgets];
  }
  setHeaders(c, budgets);
  if (!allowed) throw tooMany(budgets);
}

/**
 * Every API request but the API description: the key is resolved (401 when missing or invalid,
 * those requests themselves throttled per IP) and the request is counted against the spec's
 * limits before anything else happens. Which key kind a route needs is the route's business.
 */
export const apiGate = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.path === "/api/openapi.json" || c.var.caller) return next();
  const limits = limitsFrom(c.env);
  const caller = await authenticate(c);
  if (!caller) {
    if (limits.enabled) await limit(c, `ip:${clientIp(c)}`, { key: [badKeyRule(limits)], ip: [] });
    throw unauthorized();
  }
  c.set("caller", caller);
  if (limits.enabled) {
    const budget = c.req.path === "/api/chunk" ? "pieces" : "api";
    await limit(c, `key:${caller.keyHash}`, rulesFor(limits, budget, caller.kind));
  }
  await next();
});
