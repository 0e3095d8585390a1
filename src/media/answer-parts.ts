/**
 * One answer's body cut into the parts it carries one after another (a video's thumbnail then
 * the video; a ladder's manifest then its files), read in order from a single reader: a small
 * part into memory, a large one as a stream of its own known length that R2 can store as it
 * comes. A stream's bytes are moved chunk by chunk as its reader reads (the chunks are not
 * copied), so no more than one chunk of the body is ever held.
 */
export class AnswerParts {
  private leftover: Uint8Array | null = null;
  /** The part being streamed: the next starts when it has ended, and fails if it failed. */
  private streaming: Promise<void> = Promise.resolve();

  constructor(
    private readonly reader: ReadableStreamDefaultReader<Uint8Array>,
    /** The error a body that ends inside a part is answered with. */
    private readonly broken: (reason: string) => Error,
  ) {}

  private async chunk(): Promise<Uint8Array | null> {
    const kept = this.leftover;
    this.leftover = null;
    if (kept) return kept;
    const { done, value } = await this.reader.read();
    return done ? null : value;
  }

  /** Up to `left` bytes of the next chunk; the rest is kept for the next part. */
  private async take(left: number, what: string): Promise<Uint8Array> {
    const chunk = await this.chunk();
    if (!chunk) throw this.broken(`media service answer ended inside its ${what}`);
    if (chunk.length <= left) return chunk;
    this.leftover = chunk.subarray(left);
    return chunk.subarray(0, left);
  }

  /** The next `length` bytes, read whole: for small parts only (the caller bounds `length`). */
  async bytes(length: number, what: string): Promise<Uint8Array> {
    await this.streaming;
    const part = new Uint8Array(length);
    for (let filled = 0; filled < length; ) {
      const chunk = await this.take(length - filled, what);
      part.set(chunk, filled);
      filled += chunk.length;
    }
    return part;
  }

  /**
   * The next `length` bytes as a stream of that length. The `last` part also checks that nothing
   * follows it. A body that fails or ends short errors the stream (so its put fails) and every
   * part after it.
   */
  stream(length: number, what: string, last = false): ReadableStream<Uint8Array> {
    const sized = new FixedLengthStream(length);
    const writer = sized.writable.getWriter();
    const previous = this.streaming;
    this.streaming = (async () => {
      await previous;
      for (let left = length; left > 0; ) {
        const chunk = await this.take(left, what);
        await writer.write(chunk);
        left -= chunk.length;
      }
      if (last && ((await this.chunk())?.length ?? 0) > 0) throw this.broken("media service answer ran past its parts");
      await writer.close();
    })();
    this.streaming.catch(async (error) => {
      await writer.abort(error).catch(() => {});
      await this.reader.cancel(error).catch(() => {});
    });
    return sized.readable;
  }

  /** Gives up the rest of the body (a part refused, or not wanted). */
  async cancel(reason: unknown): Promise<void> {
    await this.reader.cancel(reason).catch(() => {});
  }
}
