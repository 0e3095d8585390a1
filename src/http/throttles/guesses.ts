import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { clientNetwork } from "../request-info";
import { adminTokenRule, passwordRules, signInRule } from "../../limits/rules";
import { retryAfterSeconds } from "./budgets";
import { limiter, networkLimiter } from "../../limits/limiters";

/**
 * Secrets people type are throttled against guessing (backoff.ts), in the rate-limit Durable
 * Objects: the upload's for its password, the client IP's for everything that client guesses.
 * A client told to wait gets no answer about its guess, right or wrong. These throttles stay on
 * when RATE_LIMITS is off: they cost an honest client nothing.
 */
type Guess = { outcome: "right" } | { outcome: "wrong" } | { outcome: "wait"; retryAfterSeconds: number };

const wait = (ms: number): Guess => ({ outcome: "wait", retryAfterSeconds: retryAfterSeconds(ms) });

/**
 * A password given on a locked upload's page. `verify` (PBKDF2, deliberately slow) runs only
 * once the upload's and the client's throttles have counted the guess, so simultaneous guesses
 * cannot slip past them together; a right password then restores what it was counted.
 */
export async function throttledPassword(
  c: Context<AppEnv>,
  uploadId: string,
  verify: () => Promise<boolean>,
): Promise<Guess> {
  const now = c.var.now();
  const rules = passwordRules(clientNetwork(c));
  const upload = limiter(c.env, `upload:${uploadId}`);
  const ip = networkLimiter(c.env, clientNetwork(c));
  const onUpload = await upload.guess(rules.upload, now);
  if (!onUpload.allowed) return wait(onUpload.retryAfterMs);
  const onIp = await ip.guess(rules.ip, now);
  if (!onIp.allowed) {
    await upload.withdraw(onUpload.ticket);
    return wait(onIp.retryAfterMs);
  }
  if (!(await verify())) return { outcome: "wrong" };
  await Promise.all([upload.guessedRight(onUpload.ticket, rules.upload), ip.guessedRight(onIp.ticket, rules.ip)]);
  return { outcome: "right" };
}

/**
 * The admin token, per client IP. Comparing it is cheap, so it is compared first, but its answer
 * is given only once the IP's throttle has let it through: a wrong token is checked against the
 * throttle and counted in one step (so simultaneous wrong tokens cannot slip past it together),
 * a right one only checked (so parallel requests of the operator never hold each other back). A
 * waiting IP gets no answer, the right token included.
 */
export async function throttledAdminToken(c: Context<AppEnv>, compare: () => Promise<boolean>): Promise<Guess> {
  const now = c.var.now();
  const ip = networkLimiter(c.env, clientNetwork(c));
  if (!(await compare())) {
    const counted = await ip.guess([adminTokenRule], now);
    return counted.allowed ? { outcome: "wrong" } : wait(counted.retryAfterMs);
  }
  const state = await ip.waitForGuess([adminTokenRule], now);
  if (state.retryAfterMs > 0) return wait(state.retryAfterMs);
  if (state.guesses > 0) await ip.forget([adminTokenRule.name]);
  return { outcome: "right" };
}

/**
 * A dashboard sign-in, per client network: counted as a guess before `verify` runs (so that
 * simultaneous attempts cannot slip past the throttle together), and taken back when it proves a
 * passkey. A waiting network gets no answer about its attempt. `verify` gives null for a wrong one.
 */
export async function throttledSignIn<T>(
  c: Context<AppEnv>,
  verify: () => Promise<T | null>,
): Promise<{ outcome: "right"; value: T } | Exclude<Guess, { outcome: "right" }>> {
  const ip = networkLimiter(c.env, clientNetwork(c));
  const counted = await ip.guess([signInRule], c.var.now());
  if (!counted.allowed) return { outcome: "wait", retryAfterSeconds: retryAfterSeconds(counted.retryAfterMs) };
  const value = await verify();
  if (value === null) return { outcome: "wrong" };
  await ip.guessedRight(counted.ticket, [signInRule]);
  return { outcome: "right", value };
}
