import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../env";

/**
 * Who makes a variant: this caller (it leads, under lease number `lease`), or another, which has
 * now ended its lead ("done") or let its lease lapse; or nobody: it cannot be made ("failed",
 * remembered until its file changes, or for `retryInMs` more), or as many makings as one upload
 * may have are under way ("busy").
 */
export type Turn = { lease: number } | "done" | "lapsed" | "busy" | { failed: string; retryInMs?: number };

/** A failure as stored: for good (until its file changes), or until `until`. */
interface StoredFailure {
  message: string;
  until: number | null;
}

/** A lease as stored: it outlives the object's eviction, and ends by itself at `until`. */
interface StoredLease {
  number: number;
  until: number;
  /** Who holds it, where that matters (a slot of the service share: the client's network). */
  holder?: string;
}

const LEASE = "lease:";
const FAILED = "failed:";
const ISSUED = "issued";
const POSTERS = "posters:";
const COPY = "copy:";

/** A stored transform copy as the index has it: its size, and when it was last served (ms). */
interface StoredCopy {
  bytes: number;
  usedAt: number;
}

/** How many transform copies, and how many of their bytes, one upload may keep. */
export interface CopyCap {
  copies: number;
  bytes: number;
}

/**
 * One per upload: the leases that make each of its variants once, however many requests ask for
 * it at the same moment and in whichever isolates, and what could not be made. The first caller
 * leads and makes it; the others wait here for the lead to end and then read what it stored. A
 * Durable Object runs one call at a time, so two callers can never both lead, and its calls may
 * wait on one another's promises (a Worker's requests may not).
 *
 * Leases, their numbers and failures are in the object's storage: an object with no call in
 * flight may be evicted about 10 s after its last one, while a making (16 s for a large AVIF)
 * still runs, and a lease kept in memory alone would be forgotten, letting a second making start
 * and the first lead's release end the second's lease. Only the waiters' wake-ups are in memory,
 * as only a live call waits. Every lease ends by itself at its time, whatever happens to its
 * holder (a request whose continuations were dropped).
 *
 * The same class, under one well-known name, holds the leases of the media service's share
 * for variants (`tryTake`): a few slots, each a lease.
 */
export class VariantLocks extends DurableObject<Env> {
  private readonly endings = new Map<string, { ended: Promise<void>; end: () => void }>();

  /**
   * Leads the making of `name` for at most `leaseMs`, or waits for the one who does. A variant
   * of file `file` that could not be made, or any variant of a file that cannot be read, answers
   * its failure. With `maxLeads`, a new lead is refused ("busy") while that many leases are live.
   */
  async take(name: string, leaseMs: number, options: { file?: string; maxLeads?: number } = {}): Promise<Turn> {
    const now = Date.now();
    const failures = await this.ctx.storage.get<StoredFailure>([
      FAILED + name,
      ...(options.file ? [FAILED + options.file] : []),
    ]);
    const failed = [...failures.values()].find((failure) => failure.until === null || failure.until > now);
    if (failed)
      return failed.until === null
        ? { failed: failed.message }
        : { failed: failed.message, retryInMs: failed.until - now };
    const held = await this.ctx.storage.get<StoredLease>(LEASE + name);
    if (!held || held.until <= now) {
      if (options.maxLeads !== undefined && (await this.liveLeases(now)) >= options.maxLeads) return "busy";
      return { lease: await this.lease(name, now + leaseMs) };
    }
    const ending = this.ending(name);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const lapsed = new Promise<Turn>((resolve) => {
      timer = setTimeout(() => resolve("lapsed"), held.until - now);
    });
    try {
      return await Promise.race([ending.ended.then((): Turn => "done"), lapsed]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A lease of the first of `names` that is free, for at most `leaseMs`, to `holder`; null when
   * none is, or when `holder` already holds one of them (one slot per client at a time).
   */
  async tryTake(names: string[], leaseMs: number, holder: string): Promise<{ name: string; lease: number } | null> {
    const now = Date.now();
    const leases = await this.ctx.storage.get<StoredLease>(names.map((name) => LEASE + name));
    const live = [...leases.values()].filter((lease) => lease.until > now);
    if (live.some((lease) => lease.holder === holder)) return null;
    const free = names.find((name) => (leases.get(LEASE + name)?.until ?? 0) <= now);
    return free === undefined ? null : { name: free, lease: await this.lease(free, now + leaseMs, holder) };
  }

  /**
   * Ends lease `number` of `name`, made or not: the callers waiting look for it in storage. A
   * lease that lapsed and was given to another caller is that caller's to end.
   */
  async release(name: string, number: number): Promise<void> {
    const held = await this.ctx.storage.get<StoredLease>(LEASE + name);
    if (held?.number !== number) return;
    await this.ctx.storage.delete(LEASE + name);
    this.endings.get(name)?.end();
    this.endings.delete(name);
  }

  /**
   * Ends lease `number` of `name`, which could not be made, and remembers why: for this variant
   * alone, or for every variant of `file` (a file the media service cannot read); for good, or
   * for `forMs`. A new file has a new key, so nothing remembered outlasts the upload's file.
   */
  async fail(name: string, number: number, message: string, options: { file?: string; forMs?: number } = {}) {
    const held = await this.ctx.storage.get<StoredLease>(LEASE + name);
    if (held?.number !== number) return;
    const until = options.forMs === undefined ? null : Date.now() + options.forMs;
    await this.ctx.storage.put<StoredFailure>(FAILED + (options.file ?? name), { message, until });
    await this.release(name, number);
  }

  /**
   * The time (ms) a poster of `file` asked for at `at` is made at: `at` itself while the file has
   * posters at fewer than `max` times, else the nearest time it has (posters.ts). Kept until the
   * object's storage goes: a new file has a new key, and its own count.
   */
  async posterTime(file: string, at: number, max: number): Promise<number> {
    const times = (await this.ctx.storage.get<number[]>(POSTERS + file)) ?? [];
    if (times.includes(at)) return at;
    if (times.length < max) {
      await this.ctx.storage.put(POSTERS + file, [...times, at]);
      return at;
    }
    return times.reduce((best, time) => (Math.abs(time - at) < Math.abs(best - at) ? time : best));
  }

  /**
   * Records copy `key` (`bytes` long), just stored, and answers the copies to delete so that the
   * upload keeps at most `cap`: the least recently used first, never `key` itself. Entries of an
   * earlier file (not under `prefix`, the current file's) are forgotten: that file's copies went
   * with it. An entry whose object is gone (removed with its focal point) counts until it goes.
   */
  async keepCopy(key: string, bytes: number, prefix: string, cap: CopyCap): Promise<string[]> {
    const now = Date.now();
    await this.ctx.storage.put<StoredCopy>(COPY + key, { bytes, usedAt: now });
    const entries = [...(await this.ctx.storage.list<StoredCopy>({ prefix: COPY })).entries()];
    const stale = entries.filter(([name]) => !name.startsWith(COPY + prefix)).map(([name]) => name);
    const kept = entries.filter(([name]) => name.startsWith(COPY + prefix));
    kept.sort(([, a], [, b]) => a.usedAt - b.usedAt);
    let count = kept.length;
    let total = kept.reduce((sum, [, copy]) => sum + copy.bytes, 0);
    const evicted: string[] = [];
    for (const [name, copy] of kept) {
      if (count <= cap.copies && total <= cap.bytes) break;
      if (name === COPY + key) continue;
      evicted.push(name);
      count--;
      total -= copy.bytes;
    }
    for (let i = 0; i < stale.length + evicted.length; i += 128) {
      await this.ctx.storage.delete([...stale, ...evicted].slice(i, i + 128));
    }
    return evicted.map((name) => name.slice(COPY.length));
  }

  /** Copy `key` was served at `at`: the last to go. A key the index does not hold is left alone. */
  async touchCopy(key: string, at: number): Promise<void> {
    const copy = await this.ctx.storage.get<StoredCopy>(COPY + key);
    if (copy && copy.usedAt < at) await this.ctx.storage.put<StoredCopy>(COPY + key, { ...copy, usedAt: at });
  }

  private async lease(name: string, until: number, holder?: string): Promise<number> {
    const number = ((await this.ctx.storage.get<number>(ISSUED)) ?? 0) + 1;
    await this.ctx.storage.put<number | StoredLease>({ [ISSUED]: number, [LEASE + name]: { number, until, holder } });
    return number;
  }

  private async liveLeases(now: number): Promise<number> {
    const leases = await this.ctx.storage.list<StoredLease>({ prefix: LEASE });
    return [...leases.values()].filter((lease) => lease.until > now).length;
  }

  private ending(name: string) {
    let ending = this.endings.get(name);
    if (!ending) {
      let end!: () => void;
      const ended = new Promise<void>((resolve) => {
        end = resolve;
      });
      ending = { ended, end };
      this.endings.set(name, ending);
    }
    return ending;
  }
}
