/**
 * The runtime hands a request body over in 4 KiB pieces, and each read costs far more than its
 * bytes: a 5 MiB piece took over a thousand reads, more time than storing it. Where the body is
 * a byte stream (request and response bodies are), reads here wait for at least BLOCK_BYTES
 * (`readAtLeast`, the runtime's own), so a body costs a read per 64 KiB. Other streams are read
 * as they come.
 */
const BLOCK_BYTES = 64 * 1024;

interface BlockReader {
  /** The next bytes, or null at the end. */
  read(): Promise<Uint8Array | null>;
  cancel(): Promise<void>;
  releaseLock(): void;
}

function byobReader(body: ReadableStream<Uint8Array>): ReadableStreamBYOBReader | null {
  try {
    return body.getReader({ mode: "byob" });
  } catch {
    return null;
  }
}

export function readBlocks(body: ReadableStream<Uint8Array>): BlockReader {
  const byob = byobReader(body);
  if (!byob) {
    const reader = body.getReader();
    return {
      read: async () => {
        const { done, value } = await reader.read();
        return done ? null : value;
      },
      cancel: () => reader.cancel(),
      releaseLock: () => reader.releaseLock(),
    };
  }
  return {
    async read() {
      for (;;) {
        const { done, value } = await byob.readAtLeast(BLOCK_BYTES, new Uint8Array(2 * BLOCK_BYTES));
        if (value && value.byteLength > 0) return value;
        if (done) return null;
      }
    },
    cancel: () => byob.cancel(),
    releaseLock: () => byob.releaseLock(),
  };
}

/**
 * The body's blocks (readBlocks) for a `for await` loop; none when there is no body. Leaving the
 * loop before the end cancels the body, as leaving a loop over the stream itself would.
 */
export async function* bodyBlocks(body: ReadableStream<Uint8Array> | null): AsyncGenerator<Uint8Array, void> {
  if (!body) return;
  const reader = readBlocks(body);
  let ended = false;
  try {
    for (let block = await reader.read(); block; block = await reader.read()) yield block;
    ended = true;
  } finally {
    if (ended) reader.releaseLock();
    else await reader.cancel().catch(() => {});
  }
}
