import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { counted, waitFor, type GuessRule, type Tally } from "./backoff";
import { decide, refund, type Rule } from "./gcra";

export interface BudgetState {
  rule: Rule;
  remaining: number;
  retryAfterMs: number;
}

interface TakeResult {
  allowed: boolean;
  budgets: BudgetState[];
  /** The latest D1 bookmark noted here (a full key's: its account's last write), if any. */
  bookmark: string | null;
}

/** A guess let through by `guess`, to settle once its outcome is known. */
interface GuessTicket {
  entries: { name: string; before: Tally | null; after: Tally }[];
}

type GuessResult = { allowed: true; ticket: GuessTicket } | { allowed: false; retryAfterMs: number };

/**
 * One per API key, one per client IP and one per locked upload. Each holds the GCRA state of its
 * budgets and the tallies of its guess throttles (backoff.ts) in SQLite, so counts survive
 * eviction and restarts. A Durable Object runs one call at a time and these methods never wait
 * on I/O (SQLite calls are synchronous), so every take and guess is atomic: of many simultaneous
 * requests, exactly the budget's worth get through. A full key's object also keeps its account's
 * last D1 write (src/http/d1-sessions.ts), whether or not RATE_LIMITS is on.
 */
export class RateLimiter extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS budgets (name TEXT PRIMARY KEY, tat REAL NOT NULL)");
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS guesses (name TEXT PRIMARY KEY, guesses INTEGER NOT NULL, last_at REAL NOT NULL)",
    );
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS bookmark (id INTEGER PRIMARY KEY CHECK (id = 1), value TEXT NOT NULL)",
    );
  }

  /** The latest D1 bookmark noted here, if any. */
  notedBookmark(): string | null {
    const row = this.ctx.storage.sql.exec<{ value: string }>("SELECT value FROM bookmark WHERE id = 1").toArray()[0];
    return row?.value ?? null;
  }

  /**
   * Keeps the later of the stored and the given D1 bookmark. Bookmarks sort by age, so writes
   * noted out of order still leave the latest.
   */
  noteBookmark(bookmark: string): void {
    this.ctx.storage.sql.exec(
      "INSERT INTO bookmark (id, value) VALUES (1, ?) " +
        "ON CONFLICT(id) DO UPDATE SET value = excluded.value WHERE excluded.value > bookmark.value",
      bookmark,
    );
  }

  private tat(name: string): number | null {
    const row = this.ctx.storage.sql.exec<{ tat: number }>("SELECT tat FROM budgets WHERE name = ?", name).toArray()[0];
    return row ? row.tat : null;
  }

  private store(name: string, tat: number) {
    this.ctx.storage.sql.exec(
      "INSERT INTO budgets (name, tat) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET tat = excluded.tat",
      name,
      tat,
    );
  }

  /** Lets one request (of `cost` units) through every rule, or through none: a refused request uses no budget. */
  take(rules: Rule[], now: number, cost = 1): TakeResult {
    const decisions = rules.map((rule) => ({ rule, decision: decide(rule, this.tat(rule.name), now, cost) }));
    const allowed = decisions.every((d) => d.decision.allowed);
    if (allowed) for (const { rule, decision } of decisions) this.store(rule.name, decision.tat);
    return {
      allowed,
      budgets: decisions.map(({ rule, decision }) => ({
        rule,
        // Refused: what is left now (nothing was used).
        remaining: allowed || !decision.allowed ? decision.remaining : decision.remaining + cost,
        retryAfterMs: decision.retryAfterMs,
      })),
      // Read in the same call, so an API read need not ask this object a second time.
      bookmark: this.notedBookmark(),
    };
  }

  /** Undoes a take whose request another limiter then refused, or that failed before using anything. */
  giveBack(rules: Rule[], now: number, cost = 1): void {
    for (const rule of rules) {
      const tat = this.tat(rule.name);
      if (tat !== null) this.store(rule.name, refund(rule, tat, now, cost));
    }
  }

  private tally(name: string): Tally | null {
    const row = this.ctx.storage.sql
      .exec<{ guesses: number; last_at: number }>("SELECT guesses, last_at FROM guesses WHERE name = ?", name)
      .toArray()[0];
    return row ? { guesses: row.guesses, lastAt: row.last_at } : null;
  }

  private record(name: string, tally: Tally | null) {
    if (!tally || tally.guesses <= 0) this.ctx.storage.sql.exec("DELETE FROM guesses WHERE name = ?", name);
    else
      this.ctx.storage.sql.exec(
        "INSERT INTO guesses (name, guesses, last_at) VALUES (?, ?, ?) " +
          "ON CONFLICT(name) DO UPDATE SET guesses = excluded.guesses, last_at = excluded.last_at",
        name,
        tally.guesses,
        tally.lastAt,
      );
  }

  /**
   * Counts a guess on every throttle before it is checked (so simultaneous guesses cannot slip
   * past a throttle together), or on none when one of them says to wait.
   */
  guess(rules: GuessRule[], now: number): GuessResult {
    const tallies = rules.map((rule) => ({ rule, before: this.tally(rule.name) }));
    const retryAfterMs = Math.max(0, ...tallies.map(({ rule, before }) => waitFor(rule, before, now)));
    if (retryAfterMs > 0) return { allowed: false, retryAfterMs };
    const entries = tallies.map(({ rule, before }) => ({ name: rule.name, before, after: counted(rule, before, now) }));
    for (const { name, after } of entries) this.record(name, after);
    return { allowed: true, ticket: { entries } };
  }

  /** The guess was right: each throttle starts afresh or does not count it, as its rule says. */
  guessedRight(ticket: GuessTicket, rules: GuessRule[]): void {
    const resets = new Set(rules.filter((r) => r.onSuccess === "reset").map((r) => r.name));
    for (const name of resets) this.record(name, null);
    this.withdraw({ entries: ticket.entries.filter((e) => !resets.has(e.name)) });
  }

  /** The guess was not made after all (another throttle refused it) or does not count. */
  withdraw(ticket: GuessTicket): void {
    for (const { name, before, after } of ticket.entries) {
      const current = this.tally(name);
      // Untouched since: exactly as before. Otherwise one guess fewer.
      if (current && current.guesses === after.guesses && current.lastAt === after.lastAt) this.record(name, before);
      else if (current) this.record(name, { ...current, guesses: current.guesses - 1 });
    }
  }

  /** How long until a guess is let through, without counting one (for a right admin token). */
  waitForGuess(rules: GuessRule[], now: number): { retryAfterMs: number; guesses: number } {
    const tallies = rules.map((rule) => ({ rule, stored: this.tally(rule.name) }));
    return {
      retryAfterMs: Math.max(0, ...tallies.map(({ rule, stored }) => waitFor(rule, stored, now))),
      guesses: Math.max(0, ...tallies.map(({ stored }) => stored?.guesses ?? 0)),
    };
  }

  forget(names: string[]): void {
    for (const name of names) this.record(name, null);
  }
}
