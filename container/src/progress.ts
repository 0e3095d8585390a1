import type { ProgressAnswer } from "./progress-contract";

/**
 * What the named calls have reported (progress-contract.ts), by call id. A call's figure is kept
 * KEPT_MS past its end, so that a poll landing between the end of the work and the answer's
 * arrival at the Worker reads its last figure rather than nothing. Ended calls are forgotten as
 * new ones come, so the board holds at most the calls of the last KEPT_MS.
 */
const KEPT_MS = 60_000;

export class ProgressBoard {
  private readonly calls = new Map<string, { percent: number | null; endedAt: number | null }>();

  start(id: string): void {
    const now = Date.now();
    for (const [other, call] of this.calls)
      if (call.endedAt !== null && now - call.endedAt > KEPT_MS) this.calls.delete(other);
    this.calls.set(id, { percent: null, endedAt: null });
  }

  report(id: string, percent: number): void {
    const call = this.calls.get(id);
    if (call && call.endedAt === null) call.percent = percent;
  }

  end(id: string): void {
    const call = this.calls.get(id);
    if (call) call.endedAt = Date.now();
  }

  read(id: string): ProgressAnswer | undefined {
    const call = this.calls.get(id);
    if (!call || (call.endedAt !== null && Date.now() - call.endedAt > KEPT_MS)) return undefined;
    return { percent: call.percent };
  }
}
