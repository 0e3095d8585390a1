import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { listingRule, variantRule } from "../../limits/rules";
import type { Rule } from "../../limits/gcra";
import { networkLimiter } from "../../limits/limiters";
import { settingsOf } from "../../settings";
import { clientNetwork } from "../request-info";
import { drawOn } from "./budgets";

/** One of the client network's own rules, drawn without X-RateLimit headers (see the callers). */
async function limitNetwork(c: Context<AppEnv>, rule: Rule) {
  if (settingsOf(c.env).limits.enabled) {
    await drawOn(c, networkLimiter(c.env, clientNetwork(c)), { key: [rule], ip: [] }, { headers: false });
  }
}

/**
 * A public listing about to be made afresh, against the client IP's listingRule. No X-RateLimit
 * headers: the answer is kept in the colo's cache and given to other clients.
 */
export const limitListing = (c: Context<AppEnv>) => limitNetwork(c, listingRule);

/**
 * A variant about to be made, against the client IP's variantRule. No X-RateLimit headers: a
 * variant's answer is the same for every client.
 */
export const limitVariantMaking = (c: Context<AppEnv>) => limitNetwork(c, variantRule);
