import { tooLarge, unprocessable } from "../errors";
import { readBlocks } from "./body-blocks";

/** One field of an application/x-www-form-urlencoded body, its value decoded as it streams in. */
export interface UrlencodedField {
  name: string;
  /** Always null: the shape of a multipart part's, so that both kinds of form are read alike. */
  filename: null;
  contentType: null;
  /** Must be consumed before the next field is asked for; an unread value is skipped. */
  body: AsyncIterable<Uint8Array>;
}

interface UrlencodedOptions {
  /** Total bytes the body may have; more fails with 413 as soon as it is passed. */
  maxBytes: number;
  tooLargeMessage: string;
}

const AMPERSAND = 0x26;
const EQUALS = 0x3d;
const PLUS = 0x2b;
const PERCENT = 0x25;
const SPACE = 0x20;
/** A field's name is a word or two: a longer one is not a field this service reads. */
const MAX_NAME_BYTES = 256;

const hexValue = (byte: number) =>
  byte >= 0x30 && byte <= 0x39 ? byte - 0x30 : byte >= 0x61 && byte <= 0x66 ? byte - 0x57 : -1;
const hexDigit = (byte: number) => hexValue(byte | 0x20);

/**
 * Percent-decoding that carries an escape split across chunks. As URLSearchParams does, `+` is a
 * space and a `%` not followed by two hex digits stays as it is.
 */
class PercentDecoder {
  /** 0: plain; 1: after `%`; 2: after `%` and one hex digit. */
  private state = 0;
  private high = 0;
  private highByte = 0;

  /** Decodes `bytes[from, to)`. */
  decode(bytes: Uint8Array, from: number, to: number): Uint8Array {
    const out = new Uint8Array(to - from + 2);
    let n = 0;
    for (let i = from; i < to; i++) {
      const byte = bytes[i]!;
      if (this.state === 1) {
        const digit = hexDigit(byte);
        if (digit >= 0) {
          this.state = 2;
          this.high = digit;
          this.highByte = byte;
          continue;
        }
        out[n++] = PERCENT;
        this.state = 0;
      } else if (this.state === 2) {
        const digit = hexDigit(byte);
        this.state = 0;
        if (digit >= 0) {
          out[n++] = (this.high << 4) | digit;
          continue;
        }
        out[n++] = PERCENT;
        out[n++] = this.highByte;
      }
      if (byte === PERCENT) this.state = 1;
      else out[n++] = byte === PLUS ? SPACE : byte;
    }
    return out.subarray(0, n);
  }

  /** What an escape left open at the end of the value stands for: itself. */
  end(): Uint8Array {
    const rest = this.state === 1 ? [PERCENT] : this.state === 2 ? [PERCENT, this.highByte] : [];
    this.state = 0;
    return new Uint8Array(rest);
  }
}

const decoder = new TextDecoder();

/** Where reading a name or a value stopped: at `&`, `=`, or the end of the body (-1). */
interface Stop {
  by: number;
  done: boolean;
}

/**
 * A urlencoded body as a sequence of fields, each value handed over as its decoded bytes arrive,
 * so that a value of many megabytes (a file in base64) is never held whole. The body is refused
 * (413) once it passes `maxBytes`, declared or not.
 */
export async function* urlencodedFields(
  body: ReadableStream<Uint8Array>,
  options: UrlencodedOptions,
): AsyncGenerator<UrlencodedField> {
  const reader = readBlocks(body);
  let chunk: Uint8Array = new Uint8Array(0);
  let at = 0;
  let received = 0;
  let ended = false;
  const pull = async (): Promise<boolean> => {
    if (ended) return false;
    const next = await reader.read();
    if (!next) {
      ended = true;
      return false;
    }
    received += next.byteLength;
    if (received > options.maxBytes) throw tooLarge(options.tooLargeMessage);
    chunk = next;
    at = 0;
    return true;
  };
  /**
   * Bytes up to the next `&` (and, while reading a name, `=`), decoded. `stopped` learns the byte
   * that ended them (-1 for the end of the body) once they are all read.
   */
  async function* until(stopAtEquals: boolean, stopped: Stop): AsyncGenerator<Uint8Array> {
    const percent = new PercentDecoder();
    for (;;) {
      if (at >= chunk.length && !(await pull())) break;
      let end = at;
      while (end < chunk.length && chunk[end] !== AMPERSAND && !(stopAtEquals && chunk[end] === EQUALS)) end++;
      const piece = percent.decode(chunk, at, end);
      at = end;
      if (piece.length > 0) yield piece;
      if (end < chunk.length) {
        stopped.by = chunk[end]!;
        stopped.done = true;
        at = end + 1;
        const rest = percent.end();
        if (rest.length > 0) yield rest;
        return;
      }
    }
    stopped.by = -1;
    stopped.done = true;
    const rest = percent.end();
    if (rest.length > 0) yield rest;
  }

  try {
    for (;;) {
      // Empty pairs (`&&`) are no fields: skipped a chunk at a time, not a generator each.
      while (at >= chunk.length || chunk[at] === AMPERSAND) {
        if (at < chunk.length) at++;
        else if (!(await pull())) return;
      }
      const stopped: Stop = { by: -1, done: false };
      const nameBytes: number[] = [];
      for await (const piece of until(true, stopped)) {
        if (nameBytes.length + piece.length > MAX_NAME_BYTES) throw unprocessable("A form field's name is too long.");
        nameBytes.push(...piece);
      }
      if (stopped.by === -1 && nameBytes.length === 0) return;
      const name = decoder.decode(new Uint8Array(nameBytes));
      if (stopped.by !== EQUALS) {
        // `name` or `name&`: a field without a value. An empty pair (`&&`) is no field.
        if (name !== "") yield { name, filename: null, contentType: null, body: (async function* () {})() };
        if (stopped.by === -1) return;
        continue;
      }
      const value: Stop = { by: -1, done: false };
      yield { name, filename: null, contentType: null, body: until(false, value) };
      // Skip whatever of the value the consumer did not read (an `&` is never part of an escape).
      if (!value.done) for await (const _ of until(false, value));
      if (value.by === -1) return;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
