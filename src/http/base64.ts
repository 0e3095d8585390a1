import { unprocessable } from "../errors";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const PAD = 0x3d;
/** Each byte's 6-bit value; -1 for whitespace (skipped), -2 for anything else. */
const VALUES = new Int8Array(256).fill(-2);
for (let i = 0; i < ALPHABET.length; i++) VALUES[ALPHABET.charCodeAt(i)] = i;
for (const space of [0x20, 0x09, 0x0a, 0x0b, 0x0c, 0x0d]) VALUES[space] = -1;

const invalid = (what: string) => unprocessable(`${what} is not valid base64.`);

/**
 * Standard base64 (RFC 4648, with its padding) decoded as it streams in, a chunk at a time, so
 * that a file sent as base64 text is never held whole. Whitespace anywhere is skipped (line
 * breaks of wrapped text); any other character outside the alphabet, padding anywhere but the
 * end, or a length that is not a whole number of 4-character groups is a 422 naming `what`.
 */
export async function* decodeBase64(chunks: AsyncIterable<Uint8Array>, what: string): AsyncGenerator<Uint8Array> {
  // The characters of an unfinished group, carried to the next chunk.
  const group = new Uint8Array(4);
  let held = 0;
  let padding = 0;
  for await (const chunk of chunks) {
    const out = new Uint8Array(Math.ceil(chunk.length / 4) * 3 + 3);
    let n = 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      const value = VALUES[byte]!;
      if (value === -1) continue;
      if (byte === PAD) {
        // Only the last one or two characters of the last group may be padding.
        if (held < 2 || ++padding > 2) throw invalid(what);
        group[held++] = 0;
      } else {
        if (value === -2 || padding > 0) throw invalid(what);
        group[held++] = value;
      }
      if (held === 4) {
        out[n++] = (group[0]! << 2) | (group[1]! >> 4);
        if (padding < 2) out[n++] = ((group[1]! & 0xf) << 4) | (group[2]! >> 2);
        if (padding < 1) out[n++] = ((group[2]! & 0x3) << 6) | group[3]!;
        held = 0;
      }
    }
    if (n > 0) yield out.subarray(0, n);
  }
  if (held !== 0) throw invalid(what);
}
