import { concatBytes } from "../../bytes";
import { unprocessable } from "../../errors";

/**
 * A streaming rewrite of a file that removes its metadata without touching the image data.
 * `push` takes the next bytes and returns what may already be written; `end` returns the rest
 * and throws (422) when the file turned out to be truncated or malformed.
 */
export interface Stripper {
  push(chunk: Uint8Array): Uint8Array[];
  end(): Uint8Array[];
  /**
   * When the output's first bytes can only be known at the end (a container size that changes),
   * the writer holds them back and lets this fix them up.
   */
  patchHead?(head: Uint8Array, totalBytes: number): void;
}

export const malformed = (format: string, reason: string) => unprocessable(`Unreadable image data (${format}): ${reason}.`);

/**
 * Base for strippers that consume their input in units (segments, chunks, blocks): `step` is
 * called while there are unconsumed bytes and returns how many it consumed, 0 to wait for more.
 */
export abstract class UnitStripper implements Stripper {
  private buffer: Uint8Array = new Uint8Array();
  private out: Uint8Array[] = [];
  protected finished = false;

  protected abstract step(b: Uint8Array): number;
  protected abstract checkComplete(): void;

  protected emit(bytes: Uint8Array) {
    if (bytes.length) this.out.push(bytes);
  }

  push(chunk: Uint8Array): Uint8Array[] {
    this.buffer = this.buffer.length ? concatBytes([this.buffer, chunk]) : chunk;
    while (this.buffer.length > 0 && !this.finished) {
      const used = this.step(this.buffer);
      if (used === 0) break;
      this.buffer = this.buffer.subarray(used);
    }
    // Bytes after the end of the image (trailers, appended data) are dropped.
    if (this.finished) this.buffer = new Uint8Array();
    return this.drain();
  }

  end(): Uint8Array[] {
    this.checkComplete();
    return this.drain();
  }

  private drain() {
    const out = this.out;
    this.out = [];
    return out;
  }
}
