/**
 * The generic cell rate algorithm (GCRA): a limit of `limit` requests per `periodMs` kept as one
 * number, the theoretical arrival time (TAT) of the next request. A fresh budget lets `limit`
 * requests through at once; after that one more is let through every periodMs / limit. So a
 * refusal always knows exactly when the next request will pass (Retry-After), and the state is a
 * single timestamp per limit, cheap to keep in a Durable Object's SQLite.
 */
export interface Rule {
  /** Name of the budget within its Durable Object, e.g. "minute". */
  name: string;
  limit: number;
  periodMs: number;
}

export interface Decision {
  allowed: boolean;
  /** The TAT to store if the request is let through. */
  tat: number;
  /** Requests left after this one (if allowed) or now (if refused). */
  remaining: number;
  /** When refused: how long until this request would pass. */
  retryAfterMs: number;
}

export function decide(rule: Rule, storedTat: number | null, now: number): Decision {
  const interval = rule.periodMs / rule.limit;
  const tat = Math.max(storedTat ?? now, now);
  const next = tat + interval;
  const used = next - now;
  if (used > rule.periodMs + 1e-6) {
    return { allowed: false, tat, remaining: 0, retryAfterMs: used - rule.periodMs };
  }
  return { allowed: true, tat: next, remaining: Math.max(0, Math.floor((rule.periodMs - used) / interval + 1e-9)), retryAfterMs: 0 };
}

/** Gives back one request (it was refused by another budget after this one let it through). */
export function refund(rule: Rule, storedTat: number, now: number): number {
  return Math.max(now, storedTat - rule.periodMs / rule.limit);
}
