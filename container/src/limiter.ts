import { JobError } from "./run";

/** At most `concurrency` jobs at once and `queue` waiting; beyond that, refuse at once (503). */
export class Limiter {
  running = 0;
  private waiting: (() => void)[] = [];

  constructor(
    private readonly concurrency: number,
    private readonly queue: number,
  ) {}

  get queued() {
    return this.waiting.length;
  }

  /** Refuses before any work (such as receiving a 200 MB body) is done for a job that cannot run. */
  admit(): void {
    if (this.running >= this.concurrency && this.waiting.length >= this.queue) {
      throw new JobError(503, "busy: too many jobs, retry later");
    }
  }

  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      this.admit();
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    this.running++;
    try {
      return await job();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
}
