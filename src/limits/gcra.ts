/**
 * The generic cell rate algorithm (GCRA): a limit of `limit` requests per `periodMs` kept as one
 * number, the theoretical arrival time (TAT) of the next request. A fresh budget lets `limit`
 * requests through at once; after that one more is let through every periodMs / limit. So a
 * refusal always knows exactly when the next request will pass (Retry-After), and the state is a
 * single timestamp per limit, cheap to keep in a Durable Object's SQLite. A request may cost more
 * than one (a budget of bytes charges each request its size).
 */
export interface Rule {
  /** Name of the budget within its Durable Object, e.g. "minute". */
  name: string;
  limit: number;
  periodMs: number;
  /** How a refusal names the limit ("4 GiB of pieces"); the bare number when absent. */
  label?: string;
}

interface Decision {
  allowed: boolean;
  /** The TAT to store if the request is let through. */
  tat: number;
  /** Units left after this request (if allowed) or now (if refused). */
  remaining: number;
  /** When refused: how long until this request would pass. */
  retryAfterMs: number;
}

export function decide(rule: Rule, storedTat: number | null, now: number, cost = 1): Decision {
  const interval = rule.periodMs / rule.limit;
  const tat = Math.max(storedTat ?? now, now);
  const left = (usedMs: number) => Math.max(0, Math.floor((rule.periodMs - usedMs) / interval + 1e-9));
  const next = tat + interval * cost;
  const used = next - now;
  if (used > rule.periodMs + 1e-6) {
    // What is left is less than the cost, or the request would have passed.
    return { allowed: false, tat, remaining: Math.min(left(tat - now), cost - 1), retryAfterMs: used - rule.periodMs };
  }
  return { allowed: true, tat: next, remaining: left(used), retryAfterMs: 0 };
}

/** Gives back a request's cost (it was refused by another budget, or failed, after this one let it through). */
export function refund(rule: Rule, storedTat: number, now: number, cost = 1): number {
  return Math.max(now, storedTat - (rule.periodMs / rule.limit) * cost);
}
