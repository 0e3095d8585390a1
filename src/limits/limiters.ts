import type { Env } from "../env";

/*
 * The RateLimiter objects (rate-limiter.ts) by what they count. Kept apart from the class, which
 * only the Worker's entry point loads.
 */

/** The object called `name`: `key:{hash}` of an API key, `ip:{network}` of a client, `upload:{id}`. */
export const limiter = (env: Env, name: string) => env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(name));

/** An API key's object, by the key's hash. */
export const keyLimiter = (env: Env, keyHash: string) => limiter(env, `key:${keyHash}`);

/** A client network's object (clientNetwork in src/http/request-info.ts). */
export const networkLimiter = (env: Env, network: string) => limiter(env, `ip:${network}`);
