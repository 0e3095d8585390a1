import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { decide, refund, type Rule } from "./gcra";

export interface BudgetState {
  rule: Rule;
  remaining: number;
  retryAfterMs: number;
}

export interface TakeResult {
  allowed: boolean;
  budgets: BudgetState[];
}

/**
 * One per API key and one per client IP. Each holds the GCRA state of its budgets in SQLite, so
 * counts survive eviction and restarts. A Durable Object runs one call at a time and these
 * methods never wait on I/O (SQLite calls are synchronous), so every take is atomic: of many
 * simultaneous requests, exactly the budget's worth get through.
 */
export class RateLimiter extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS budgets (name TEXT PRIMARY KEY, tat REAL NOT NULL)");
  }

  private tat(name: string): number | null {
    const row = this.ctx.storage.sql.exec<{ tat: number }>("SELECT tat FROM budgets WHERE name = ?", name).toArray()[0];
    return row ? row.tat : null;
  }

  private store(name: string, tat: number) {
    this.ctx.storage.sql.exec("INSERT INTO budgets (name, tat) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET tat = excluded.tat", name, tat);
  }

  /** Lets one request through every rule, or through none: a refused request uses no budget. */
  take(rules: Rule[], now: number): TakeResult {
    const decisions = rules.map((rule) => ({ rule, decision: decide(rule, this.tat(rule.name), now) }));
    const allowed = decisions.every((d) => d.decision.allowed);
    if (allowed) for (const { rule, decision } of decisions) this.store(rule.name, decision.tat);
    return {
      allowed,
      budgets: decisions.map(({ rule, decision }) => ({
        rule,
        // Refused: what is left now (nothing was used); the refusing budgets have none.
        remaining: allowed ? decision.remaining : decision.allowed ? decision.remaining + 1 : 0,
        retryAfterMs: decision.retryAfterMs,
      })),
    };
  }

  /** Undoes a take whose request another limiter then refused. */
  giveBack(rules: Rule[], now: number): void {
    for (const rule of rules) {
      const tat = this.tat(rule.name);
      if (tat !== null) this.store(rule.name, refund(rule, tat, now));
    }
  }
}
