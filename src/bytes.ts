/** Joins byte chunks into one array. */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  let length = 0;
  for (const c of chunks) length += c.byteLength;
  const out = new Uint8Array(length);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/*
 * Integers as file formats store them, read at `at` in big-endian (be) or little-endian (le) byte
 * order. Bytes past the end read as 0 rather than throwing as a DataView would: callers check
 * lengths first wherever a short read matters.
 */

export const u16be = (b: Uint8Array, at: number) => (b[at]! << 8) | b[at + 1]!;
export const u16le = (b: Uint8Array, at: number) => b[at]! | (b[at + 1]! << 8);
export const u24le = (b: Uint8Array, at: number) => b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16);
/** `>>> 0`: a set top bit is a large size, not a negative one. */
export const u32be = (b: Uint8Array, at: number) =>
  ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
/** Signed, for the fields that are (BMP's height is negative for top-down rows). */
export const i32le = (b: Uint8Array, at: number) =>
  b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24);
export const u32le = (b: Uint8Array, at: number) => i32le(b, at) >>> 0;
/** As a number: exact below 2^53, far beyond any size a file here can have. */
export const u64be = (b: Uint8Array, at: number) => u32be(b, at) * 2 ** 32 + u32be(b, at + 4);

/** Bytes as Latin-1 text: four-character codes, signatures, identifiers. */
export const ascii = (b: Uint8Array, at: number, length: number) => String.fromCharCode(...b.subarray(at, at + length));

/** Unpadded base64url of a binary string (one byte a character, as btoa takes): for URLs. */
export const base64Url = (binary: string) => btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");

/** The binary string of unpadded base64url; throws as atob does on what is not base64. */
export const fromBase64Url = (text: string) => atob(text.replaceAll("-", "+").replaceAll("_", "/"));
