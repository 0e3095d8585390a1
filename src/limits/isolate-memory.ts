import { ApiError } from "../errors";
import { MiB } from "../model/spec-limits";

/**
 * One account of the memory that the requests of this isolate hold at once.
 *
 * A Worker isolate may use 128 MiB, WebAssembly memory included, and it serves many requests
 * at the same time; local workerd does not enforce the limit, so this account must. Each piece
 * of work that holds a large buffer (a file streaming into storage, a piece, an image decoded in
 * the Worker) reserves what it may hold before it starts, and gives it back when it ends; memory
 * that stays (the image codecs' WebAssembly memory, which never shrinks) is counted as resident.
 * Work that does not fit waits a little for others to finish, goes elsewhere (image work to the
 * media service), or is refused with 503 and Retry-After.
 */
export const ISOLATE_LIMIT_BYTES = 128 * MiB;
/** What the account may reach: the rest of the limit is margin for what it does not see. */
export const ISOLATE_MEMORY_BUDGET_BYTES = 100 * MiB;
/** The Worker's own code and heap, and each request's small objects, outside any reservation. */
export const ISOLATE_BASELINE_BYTES = 16 * MiB;

export interface Reservation {
  /** Bytes held now. */
  readonly bytes: number;
  /**
   * Holds `bytes` in all (no change if it already holds as many), waiting up to `waitMs` for
   * other work to give memory back; then 503. Work whose size shows only as it streams grows
   * its reservation as it goes, so a request that meets a full account stops reading until
   * there is room, rather than holding what was not counted.
   */
  growTo(bytes: number, waitMs?: number): Promise<void>;
  /** Gives every byte back; calling it again does nothing. */
  release(): void;
}

const memoryBusy = () =>
  new ApiError(503, "The service is busy with other uploads right now; send this again in a few seconds.", {
    "Retry-After": "5",
  });

/** How long a request waits for memory before it is refused. */
const MEMORY_WAIT_MS = 10_000;
const POLL_MS = 50;
/**
 * The longest a reservation is held unused. A request whose continuations the runtime drops
 * (cancelled deployed) never releases what it reserved; past this since its last growth (work
 * that streams grows it as it goes), far beyond any request's work on its buffers, the account
 * takes it back rather than stay short for the isolate's life.
 */
export const RESERVATION_CEILING_MS = 15 * 60_000;

export class MemoryLedger {
  private reservedBytes = 0;
  private peakBytes = 0;
  /** Live reservations: when each was opened, and how to take it back at its ceiling. */
  private readonly live = new Map<object, { since: number; expire: () => void }>();
  private readonly residents: (() => number)[] = [];
  private readonly reclaimers: (() => void)[] = [];

  constructor(
    readonly budget = ISOLATE_MEMORY_BUDGET_BYTES,
    readonly baseline = ISOLATE_BASELINE_BYTES,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Memory that stays once grown (WebAssembly instances): read anew at every decision. `reclaim`
   * gives up what can be made again later (an idle codec, instantiated anew when next needed); it
   * is called when a reservation would not fit otherwise.
   */
  addResident(bytes: () => number, reclaim?: () => void) {
    this.residents.push(bytes);
    if (reclaim) this.reclaimers.push(reclaim);
  }

  get resident() {
    return this.residents.reduce((sum, bytes) => sum + bytes(), 0);
  }

  /** Bytes reserved by work in progress. */
  get reserved() {
    return this.reservedBytes;
  }

  /** What the account holds now: baseline, resident memory and every reservation. */
  get held() {
    return this.baseline + this.resident + this.reservedBytes;
  }

  /** The most the account has held since the isolate started (or since resetPeak). */
  get peak() {
    return this.peakBytes;
  }

  resetPeak() {
    this.peakBytes = this.held;
  }

  private take(bytes: number): boolean {
    this.expireStale();
    if (this.held + bytes > this.budget) {
      for (const reclaim of this.reclaimers) reclaim();
      if (this.held + bytes > this.budget) return false;
    }
    this.reservedBytes += bytes;
    this.peakBytes = Math.max(this.peakBytes, this.held);
    return true;
  }

  /** An empty reservation, to grow as the work's size shows. */
  open(): Reservation {
    return this.reservation(0);
  }

  /** A reservation of `bytes` if they fit now, else null. */
  tryReserve(bytes: number): Reservation | null {
    return this.take(bytes) ? this.reservation(bytes) : null;
  }

  private expireStale() {
    const oldest = this.now() - RESERVATION_CEILING_MS;
    for (const [reservation, { since, expire }] of this.live) {
      if (since > oldest) continue;
      console.error(JSON.stringify({ isolateMemory: "reservation held past its ceiling, taken back" }));
      expire();
      this.live.delete(reservation);
    }
  }

  /** A reservation holding `taken` bytes already taken from the account. */
  private reservation(taken: number): Reservation {
    let held = taken;
    let released = false;
    const ledger = this;
    const key = {};
    const entry = {
      since: ledger.now(),
      expire() {
        released = true;
        ledger.reservedBytes -= held;
        held = 0;
      },
    };
    ledger.live.set(key, entry);
    return {
      get bytes() {
        return held;
      },
      async growTo(bytes, waitMs = MEMORY_WAIT_MS) {
        if (released) throw new Error("a released reservation cannot grow");
        // In use: its ceiling counts from its last growth (a slow upload is still working).
        entry.since = ledger.now();
        if (bytes <= held) return;
        if (ledger.baseline + bytes > ledger.budget) throw memoryBusy();
        // Each waiter polls on its own timer: a promise settled by another request's code would
        // leave this request waiting on that request (workerd runs each request's continuations
        // in its own context), so no waiter is ever woken by another.
        const deadline = Date.now() + waitMs;
        while (!ledger.take(bytes - held)) {
          if (Date.now() >= deadline) throw memoryBusy();
          await new Promise((resolve) => setTimeout(resolve, POLL_MS * (0.5 + Math.random())));
          if (released) throw new Error("a released reservation cannot grow");
        }
        held = bytes;
      },
      release() {
        if (released) return;
        released = true;
        ledger.live.delete(key);
        ledger.reservedBytes -= held;
        held = 0;
      },
    };
  }
}

/** The account of this isolate: module state lives as long as the isolate does. */
export const isolateMemory = new MemoryLedger();
