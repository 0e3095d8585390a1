import { open } from "node:fs/promises";
import type http from "node:http";
import { JobError } from "./run";
import type { TempShare } from "./temp-space";

/** How long the rest of a refused body is read and dropped, so that the client can read the answer. */
const LINGER_MS = 5000;

/**
 * Takes a body's declared size from the temporary space before a byte of it is written: 413 over
 * the input limit, 503 over what is left. Null when no size was declared (chunked).
 */
export function takeDeclared(req: http.IncomingMessage, maxInputBytes: number, space: TempShare): number | null {
  const header = req.headers["content-length"];
  if (header === undefined) return null;
  const declared = Number(header);
  if (declared > maxInputBytes) throw new JobError(413, `input over ${maxInputBytes} bytes`);
  space.take(declared);
  return declared;
}

/**
 * Writes the body to `file`. Without a declared size, each piece is taken from the temporary space
 * as it comes, and the body is cut off (503) when none is left, or (413) past the input limit.
 */
export async function receive(
  req: http.IncomingMessage,
  file: string,
  maxInputBytes: number,
  space: TempShare,
  declared: number | null,
) {
  const handle = await open(file, "w");
  let received = 0;
  try {
    // Stopping early must leave the request open: the answer still goes out on its connection.
    for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      received += chunk.length;
      if (received > maxInputBytes) throw new JobError(413, `input over ${maxInputBytes} bytes`);
      if (declared === null) space.take(chunk.length);
      await handle.write(chunk);
    }
  } catch (error) {
    if (error instanceof JobError) throw error;
    throw new JobError(400, "the request body ended early");
  } finally {
    await handle.close();
  }
  if (received === 0) throw new JobError(400, "empty input");
}

/**
 * After answering a request whose body was not all read: the connection closes, and what the
 * client still sends is dropped (for a few seconds at most) rather than left unread, which would
 * reset the connection before the client has read the answer.
 */
export function dropRest(req: http.IncomingMessage, res: http.ServerResponse) {
  res.on("finish", () => {
    req.resume();
    setTimeout(() => req.socket.destroy(), LINGER_MS).unref();
  });
}
