import { concatBytes } from "../bytes";
import { unprocessable } from "../errors";
import { multipartEvents, type MultipartOptions } from "./multipart";

interface MultipartPart {
  name: string;
  filename: string | null;
  contentType: string | null;
  /** Must be consumed before the next part is asked for; an unread body is skipped. */
  body: AsyncIterable<Uint8Array>;
}

/** The multipart stream as a sequence of parts, each with a streamed body. */
export async function* multipartParts(
  body: ReadableStream<Uint8Array>,
  boundary: string,
  options: MultipartOptions,
): AsyncGenerator<MultipartPart> {
  const events = multipartEvents(body, boundary, options);
  let next = await events.next();
  while (!next.done) {
    const event = next.value;
    if (event.kind === "end") return;
    if (event.kind === "data") {
      next = await events.next();
      continue;
    }
    let bodyDone = false;
    const partBody = async function* () {
      while (!bodyDone) {
        next = await events.next();
        if (next.done || next.value.kind !== "data") bodyDone = true;
        else yield next.value.chunk;
      }
    };
    yield { name: event.name, filename: event.filename, contentType: event.contentType, body: partBody() };
    // Skip whatever of the body the consumer did not read.
    for await (const _ of partBody());
  }
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** A text field's bytes, refusing more than `max`. */
async function readTextBytes(part: MultipartPart, max: number, onTooLong: () => Error): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of part.body) {
    length += chunk.byteLength;
    if (length > max) throw onTooLong();
    chunks.push(chunk);
  }
  return concatBytes(chunks);
}

/** Reads a text field's body, refusing more than `max` bytes. */
export async function readTextPart(part: MultipartPart, max: number, onTooLong: () => Error): Promise<string> {
  return decoder.decode(await readTextBytes(part, max, onTooLong));
}

/**
 * The text fields of a multipart body, names and values within `max` bytes in all: a body may
 * have many parts, and each held whole within its own limit would still add up.
 */
export class TextFields {
  /** Without a prototype, so that a field named `__proto__` or `constructor` is a field like any other. */
  readonly values: Record<string, string> = Object.create(null);
  private left: number;

  constructor(private readonly max: number) {
    this.left = max;
  }

  async read(part: MultipartPart): Promise<void> {
    const tooLong = () =>
      unprocessable(`Field ${part.name} is too long: text fields may have ${this.max} bytes in all.`);
    this.left -= encoder.encode(part.name).length;
    if (this.left < 0) throw tooLong();
    const bytes = await readTextBytes(part, this.left, tooLong);
    this.left -= bytes.length;
    this.values[part.name] = decoder.decode(bytes);
  }
}
