/**
 * The bytes of a stream that were received but not yet consumed. Appending copies only the new
 * bytes (room doubles when it runs out), so reading a stream costs time linear in its size
 * however small its chunks, where joining the held bytes with each chunk would be quadratic.
 * Consumed bytes are handed out as views and never written over, so they stay valid.
 */
export class UnreadBytes {
  private storage: Uint8Array;
  private start = 0;
  private end: number;

  constructor(initial: Uint8Array = new Uint8Array(0)) {
    this.storage = initial;
    this.end = initial.length;
  }

  get length(): number {
    return this.end - this.start;
  }

  /** A view of the unread bytes, valid until the next append. */
  get bytes(): Uint8Array {
    return this.storage.subarray(this.start, this.end);
  }

  at(index: number): number | undefined {
    return index < this.length ? this.storage[this.start + index] : undefined;
  }

  append(chunk: Uint8Array): void {
    if (this.length === 0) {
      // Nothing held: the chunk itself becomes the buffer, with no copy.
      this.storage = chunk;
      this.start = 0;
      this.end = chunk.length;
      return;
    }
    if (this.end + chunk.length > this.storage.length) {
      const held = this.bytes;
      this.storage = new Uint8Array(Math.max(2 * held.length, held.length + chunk.length));
      this.storage.set(held);
      this.start = 0;
      this.end = held.length;
    }
    this.storage.set(chunk, this.end);
    this.end += chunk.length;
  }

  /** Consumes the next `count` bytes and returns them. */
  take(count: number): Uint8Array {
    const taken = this.storage.subarray(this.start, this.start + count);
    this.start += taken.length;
    return taken;
  }
}
