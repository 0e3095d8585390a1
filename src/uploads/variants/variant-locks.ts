import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../env";

/**
 * Who makes a variant: this caller (it leads, under lease number `lease`), or another, which has
 * now ended its lead ("done") or let its lease lapse.
 */
export type Turn = { lease: number } | "done" | "lapsed";

interface Lease {
  number: number;
  until: number;
  ended: Promise<void>;
  end: () => void;
}

/**
 * One per upload: the leases that make each of its variants once, however many requests ask for
 * it at the same moment and in whichever isolates. The first caller leads and makes it; the
 * others wait here for the lead to end and then read what it stored. A Durable Object runs one
 * call at a time, so two callers can never both lead, and its calls may wait on one another's
 * promises (a Worker's requests may not). Leases are held in memory only: an object evicted
 * while one is held forgets it, and at worst the variant is made twice, never served wrong.
 */
export class VariantLocks extends DurableObject<Env> {
  private readonly leases = new Map<string, Lease>();
  private issued = 0;

  /** Leads the making of `name` for at most `leaseMs`, or waits for the one who does. */
  async take(name: string, leaseMs: number): Promise<Turn> {
    const now = Date.now();
    const held = this.leases.get(name);
    if (!held || held.until <= now) {
      let end!: () => void;
      const ended = new Promise<void>((resolve) => {
        end = resolve;
      });
      const number = ++this.issued;
      this.leases.set(name, { number, until: now + leaseMs, ended, end });
      return { lease: number };
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const lapsed = new Promise<Turn>((resolve) => {
      timer = setTimeout(() => resolve("lapsed"), held.until - now);
    });
    try {
      return await Promise.race([held.ended.then((): Turn => "done"), lapsed]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Ends lease `number` of `name`, made or not: the callers waiting look for it in storage. A
   * lease that lapsed and was given to another caller is that caller's to end.
   */
  release(name: string, number: number): void {
    const held = this.leases.get(name);
    if (held?.number !== number) return;
    this.leases.delete(name);
    held.end();
  }
}
