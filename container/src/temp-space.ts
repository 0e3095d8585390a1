import { JobError } from "./run";

/**
 * Bytes of job inputs on the temporary disk, all jobs together, within MAX_TEMP_BYTES. A job takes
 * its input's declared size before writing a byte, or as the bytes come when the size was not
 * declared; what is not left is refused with 503 (retry later), and a job gives back all it took
 * when it ends.
 */
export class TempSpace {
  used = 0;

  constructor(private readonly limit: number) {}

  /** A job's share, empty until it takes some. */
  share() {
    let held = 0;
    return {
      take: (bytes: number) => {
        if (this.used + bytes > this.limit)
          throw new JobError(503, "busy: no temporary space left for the input, retry later");
        this.used += bytes;
        held += bytes;
      },
      release: () => {
        this.used -= held;
        held = 0;
      },
    };
  }
}

export type TempShare = ReturnType<TempSpace["share"]>;
