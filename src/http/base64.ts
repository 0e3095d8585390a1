import { concatBytes } from "../bytes";
import { unprocessable } from "../errors";

/**
 * Base64 (RFC 4648), the one decoder of every way in that takes it: a file sent as base64 text
 * to a compatible endpoint (decoded as it streams in, never held whole), tus's Upload-Metadata
 * values and checksum digests, and MCP's inline files. By default it is strict: the standard
 * alphabet, the padding, and no other character but whitespace (space, tab, line feed, form feed,
 * carriage return: atob's), which is skipped anywhere (line breaks of wrapped text). What a caller
 * takes beyond that, it says in options; each keeps what it has always taken.
 */
export interface Base64Options {
  /** `-` and `_` read as `+` and `/` too (base64url, RFC 4648 §5), which agents often send. */
  urlSafe?: boolean;
  /** The last group may leave out its `=` padding, as atob allows. */
  unpadded?: boolean;
  /** The vertical tab is whitespace too (as C's isspace has it), which atob refuses. */
  verticalTab?: boolean;
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const PAD = 0x3d;
const SPACE = -1;
const INVALID = -2;

/** Each byte's 6-bit value; SPACE for whitespace (skipped), INVALID for anything else. */
function valueTable(options: Base64Options): Int8Array {
  const values = new Int8Array(256).fill(INVALID);
  for (let i = 0; i < ALPHABET.length; i++) values[ALPHABET.charCodeAt(i)] = i;
  for (const space of [0x20, 0x09, 0x0a, 0x0c, 0x0d]) values[space] = SPACE;
  if (options.verticalTab) values[0x0b] = SPACE;
  if (options.urlSafe) {
    values[0x2d] = 62; // -
    values[0x5f] = 63; // _
  }
  return values;
}

/**
 * The decoder's state between chunks: the characters of an unfinished group, and how many of
 * them were padding. `push` and `end` answer null as soon as the text is not valid base64.
 */
class Base64Decoder {
  private readonly values: Int8Array;
  private readonly unpadded: boolean;
  private readonly group = new Uint8Array(4);
  private held = 0;
  private padding = 0;

  constructor(options: Base64Options) {
    this.values = valueTable(options);
    this.unpadded = options.unpadded ?? false;
  }

  /** The bytes of the groups `chunk` completes. */
  push(chunk: Uint8Array): Uint8Array | null {
    const out = new Uint8Array(Math.ceil(chunk.length / 4) * 3 + 3);
    let n = 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      const value = this.values[byte]!;
      if (value === SPACE) continue;
      if (byte === PAD) {
        // Only the last one or two characters of the last group may be padding.
        if (this.held < 2 || ++this.padding > 2) return null;
        this.group[this.held++] = 0;
      } else {
        if (value === INVALID || this.padding > 0) return null;
        this.group[this.held++] = value;
      }
      if (this.held === 4) {
        n = this.emit(out, n);
        this.held = 0;
      }
    }
    return out.subarray(0, n);
  }

  /** The bytes of an unpadded last group, if allowed; null for a group left unfinished. */
  end(): Uint8Array | null {
    if (this.held === 0) return new Uint8Array(0);
    // Two or three characters carry one or two bytes; one carries less than a byte.
    if (!this.unpadded || this.padding > 0 || this.held < 2) return null;
    this.padding = 4 - this.held;
    const out = new Uint8Array(2);
    return out.subarray(0, this.emit(out, 0));
  }

  /** Writes the group's bytes (three, less one for each `=`) at `n`; answers the new length. */
  private emit(out: Uint8Array, n: number): number {
    const [a, b, c, d] = this.group;
    out[n++] = (a! << 2) | (b! >> 4);
    if (this.padding < 2) out[n++] = ((b! & 0xf) << 4) | (c! >> 2);
    if (this.padding < 1) out[n++] = ((c! & 0x3) << 6) | d!;
    return n;
  }
}

const invalid = (what: string) => unprocessable(`${what} is not valid base64.`);

/**
 * Base64 text decoded as it streams in, a chunk at a time, so that a file sent as base64 is never
 * held whole. Text that is not valid base64 is a 422 naming `what`.
 */
export async function* decodeBase64(
  chunks: AsyncIterable<Uint8Array>,
  what: string,
  options: Base64Options = {},
): AsyncGenerator<Uint8Array> {
  const decoder = new Base64Decoder(options);
  for await (const chunk of chunks) {
    const bytes = decoder.push(chunk);
    if (!bytes) throw invalid(what);
    if (bytes.length > 0) yield bytes;
  }
  const last = decoder.end();
  if (!last) throw invalid(what);
  if (last.length > 0) yield last;
}

const utf8 = new TextEncoder();

/** Short base64 text (a header's value, a tool's argument) decoded whole; null when it is not valid base64. */
export function decodeBase64Text(text: string, options: Base64Options = {}): Uint8Array | null {
  const decoder = new Base64Decoder(options);
  const bytes = decoder.push(utf8.encode(text));
  const last = decoder.end();
  if (!bytes || !last) return null;
  return last.length > 0 ? concatBytes([bytes, last]) : bytes;
}
