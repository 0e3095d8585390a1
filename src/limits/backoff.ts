/**
 * Throttles for guessing a secret (an upload's password, the admin token): a few guesses go
 * through freely, then each further wrong one doubles the wait before the next is looked at, up
 * to a cap. Wrong guesses are forgotten one per `decayMs` without a guess, so a person who
 * mistyped is soon back to normal while a guesser never is. The state is two numbers per
 * throttle, kept in the rate-limit Durable Object's SQLite.
 */
export interface GuessRule {
  /** Name of the throttle within its Durable Object, e.g. "password". */
  name: string;
  /** Guesses let through before any wait. */
  free: number;
  /** The first wait; it doubles with each further guess. */
  baseMs: number;
  /** The longest wait; at most decayMs, so a wait never outlasts the guesses it is for. */
  capMs: number;
  decayMs: number;
  /** What a right guess does: start afresh, or just not count. */
  onSuccess: "reset" | "withdraw";
}

export interface Tally {
  /** Guesses counted, the last one at `lastAt`. */
  guesses: number;
  lastAt: number;
}

/** The guesses still held against a client at `now`, after those forgotten since the last one. */
function remembered(rule: GuessRule, stored: Tally | null, now: number): number {
  if (!stored) return 0;
  return Math.max(0, stored.guesses - Math.floor((now - stored.lastAt) / rule.decayMs));
}

/** How long after the last of `guesses` guesses the next one must wait. */
function waitAfter(rule: GuessRule, guesses: number): number {
  if (guesses < rule.free) return 0;
  return Math.min(rule.capMs, rule.baseMs * 2 ** Math.min(guesses - rule.free, 40));
}

/** How long until a guess is let through (0: now). */
export function waitFor(rule: GuessRule, stored: Tally | null, now: number): number {
  if (!stored) return 0;
  return Math.max(0, stored.lastAt + waitAfter(rule, stored.guesses) - now);
}

/** The tally with one more guess, made at `now`. */
export const counted = (rule: GuessRule, stored: Tally | null, now: number): Tally => ({
  guesses: remembered(rule, stored, now) + 1,
  lastAt: now,
});
