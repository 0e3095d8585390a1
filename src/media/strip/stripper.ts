import { unprocessable } from "../../errors";

/**
 * A streaming rewrite of a file that removes its metadata without touching the image data.
 * `push` takes the next bytes and returns what may already be written; `end` returns the rest
 * and throws (422) when the file turned out to be truncated or malformed.
 */
export interface Stripper {
  push(chunk: Uint8Array): Uint8Array[];
  end(): Uint8Array[];
  /** Input bytes kept between pushes: never more than MAX_HELD_BYTES, whatever the file declares. */
  heldBytes(): number;
  /**
   * When the output's first bytes can only be known at the end (a container size that changes),
   * the writer holds them back and lets this fix them up.
   */
  patchHead?(head: Uint8Array, totalBytes: number): void;
}

export const malformed = (format: string, reason: string, kind: "image" | "video" = "image") =>
  unprocessable(`Unreadable ${kind} data (${format}): ${reason}.`);

/**
 * The largest unit a step may need whole: a JPEG segment (marker, length, 65533 bytes). Every
 * other structure a file may declare larger is streamed through or skipped, so that what an
 * upload holds in memory does not grow with the sizes an attacker writes into its headers.
 */
const MAX_UNIT_BYTES = 2 + 0xffff;
/** What may be held between pushes: the start of a unit still incomplete. */
export const MAX_HELD_BYTES = MAX_UNIT_BYTES - 1;

const NOTHING = new Uint8Array(0);

/**
 * Base for strippers that consume their input in units (segments, chunks, blocks): `step` is
 * called while there are unconsumed bytes and returns how many it consumed, or `wait(n)` when
 * it needs n bytes (at most MAX_UNIT_BYTES) to decide. Incoming pieces are worked on in place;
 * only the start of an incomplete unit is copied aside, once, so the cost stays linear in the
 * bytes received however small the pieces.
 */
export abstract class UnitStripper implements Stripper {
  /** The incomplete unit: `heldLength` bytes, in a buffer big enough for the `need` it waits for. */
  private held = NOTHING;
  private heldLength = 0;
  private need = 0;
  private out: Uint8Array[] = [];
  protected finished = false;

  protected abstract step(b: Uint8Array): number;
  protected abstract checkComplete(): void;

  /** For `step`: consume nothing until `bytes` bytes from here are available. */
  protected wait(bytes: number): number {
    if (bytes > MAX_UNIT_BYTES) throw new Error(`a stripper step asked for ${bytes} bytes at once`);
    this.need = bytes;
    return 0;
  }

  /** Pieces emitted may be views of the input, which the caller must not change afterwards. */
  protected emit(bytes: Uint8Array) {
    if (bytes.length) this.out.push(bytes);
  }

  heldBytes() {
    return this.heldLength;
  }

  push(chunk: Uint8Array): Uint8Array[] {
    let input = chunk;
    while (input.length > 0 && !this.finished) {
      if (this.heldLength === 0) {
        input = input.subarray(this.run(input));
        if (input.length > 0 && !this.finished) this.hold(input);
        break;
      }
      const take = Math.min(this.need - this.heldLength, input.length);
      this.held.set(input.subarray(0, take), this.heldLength);
      this.heldLength += take;
      input = input.subarray(take);
      if (this.heldLength < this.need) break;
      const unit = this.held.subarray(0, this.heldLength);
      const used = this.run(unit);
      // A new buffer for what is left: pieces already emitted may be views of this one.
      this.held = NOTHING;
      this.heldLength = 0;
      if (used < unit.length && !this.finished) this.hold(unit.subarray(used));
    }
    // Bytes after the end of the image (trailers, appended data) are dropped.
    return this.drain();
  }

  end(): Uint8Array[] {
    this.checkComplete();
    return this.drain();
  }

  /** Steps through `b` until a step waits for more than is left; returns the bytes consumed. */
  private run(b: Uint8Array): number {
    let at = 0;
    while (at < b.length && !this.finished) {
      this.need = 0;
      const used = this.step(b.subarray(at));
      if (used > 0) {
        at += used;
        continue;
      }
      if (this.need <= b.length - at) throw new Error("a stripper step made no progress");
      break;
    }
    return at;
  }

  private hold(rest: Uint8Array) {
    this.held = new Uint8Array(this.need);
    this.held.set(rest);
    this.heldLength = rest.length;
  }

  private drain() {
    const out = this.out;
    this.out = [];
    return out;
  }
}
