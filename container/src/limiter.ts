import { gone, JobError } from "./run";

/**
 * Places for jobs, held from the moment a request is admitted (before its body arrives) until it
 * ends: at most `concurrency` running, and `concurrency + queue` admitted in all, whether
 * receiving their input, waiting or running. Beyond that a request is refused at once (503), so
 * that parallel uploads cannot each stream an input to disk while they wait.
 */
export class Limiter {
  running = 0;
  admitted = 0;
  private waiting: (() => void)[] = [];

  constructor(
    private readonly concurrency: number,
    private readonly queue: number,
  ) {}

  get queued() {
    return this.waiting.length;
  }

  /** Admitted jobs still receiving their input. */
  get receiving() {
    return this.admitted - this.running - this.queued;
  }

  /** Takes a place for a job, or refuses (503); the returned function gives it back when the job ends. */
  admit(): () => void {
    if (this.admitted >= this.concurrency + this.queue) throw new JobError(503, "busy: too many jobs, retry later");
    this.admitted++;
    let held = true;
    return () => {
      if (held) this.admitted--;
      held = false;
    };
  }

  /** Runs an admitted job when one of the running places is free; `signal` gives up the wait. */
  async run<T>(job: () => Promise<T>, signal: AbortSignal): Promise<T> {
    if (this.running < this.concurrency) this.running++;
    else await this.turn(signal);
    try {
      return await job();
    } finally {
      // The place passes straight to the next job, so that none arriving meanwhile takes it.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  private turn(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(gone());
      const start = () => {
        signal.removeEventListener("abort", leave);
        resolve();
      };
      const leave = () => {
        this.waiting.splice(this.waiting.indexOf(start), 1);
        reject(gone());
      };
      this.waiting.push(start);
      signal.addEventListener("abort", leave, { once: true });
    });
  }
}
