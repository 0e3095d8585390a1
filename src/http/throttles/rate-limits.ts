import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../../env";
import { settingsOf } from "../../settings";
import { drawOn } from "./budgets";
import { keyLimiter } from "../../limits/limiters";
import { rulesFor, type Budget } from "../../limits/rules";

/**
 * The request counted against the spec's limits before anything else happens: `budget`'s rules
 * (pieces have their own) on the caller's key, then on its client network. A 429 with Retry-After
 * when one is used up; every answer carries the X-RateLimit headers of the budget closest to
 * running out. Nothing is counted when RATE_LIMITS is off.
 */
export const rateLimits = (budget: Budget) =>
  createMiddleware<AppEnv>(async (c, next) => {
    await drawRateLimits(c, budget);
    await next();
  });

/** What rateLimits counts, for a way in that counts `cost` operations in one request (MCP). */
export async function drawRateLimits(c: Context<AppEnv>, budget: Budget, cost = 1) {
  const { limits } = settingsOf(c.env);
  const { caller } = c.var;
  if (!limits.enabled) return;
  const rules = rulesFor(limits, budget, caller.kind);
  const bookmark = await drawOn(c, keyLimiter(c.env, caller.keyHash), rules, { cost });
  // A full key's object also keeps its account's last write: the D1 session need not ask again.
  if (caller.keyHash === caller.fullKeyHash) c.set("lastWrite", bookmark);
}
