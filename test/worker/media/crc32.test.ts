import { describe, expect, it } from "vitest";
import { crc32 } from "../../../src/media/strip/crc32";

/** The byte-at-a-time definition the fast one must agree with. */
function reference(bytes: Uint8Array, previous = 0): number {
  let c = ~previous >>> 0;
  for (const byte of bytes) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  }
  return ~c >>> 0;
}

describe("crc32", () => {
  it("gives the known check value and the CRC of PNG's IEND chunk", () => {
    expect(crc32(new TextEncoder().encode("123456789"))).toBe(0xcbf43926);
    expect(crc32(new TextEncoder().encode("IEND"))).toBe(0xae426082);
    expect(crc32(new Uint8Array())).toBe(0);
  });

  it("agrees with the byte-at-a-time definition at every length and split", () => {
    const bytes = crypto.getRandomValues(new Uint8Array(300));
    for (let length = 0; length <= bytes.length; length += 7) {
      const data = bytes.subarray(0, length);
      expect(crc32(data), `length ${length}`).toBe(reference(data));
      for (const cut of [1, 3, 8, 13]) {
        if (cut > length) continue;
        expect(crc32(data.subarray(cut), crc32(data.subarray(0, cut))), `length ${length}, cut ${cut}`).toBe(
          reference(data),
        );
      }
    }
  });

  it("agrees across the slices a long input is taken in", () => {
    const bytes = crypto.getRandomValues(new Uint8Array(65536)).map((b, i) => b ^ i);
    const long = new Uint8Array(2.5 * 1024 * 1024 + 3).map((_, i) => bytes[i % bytes.length]!);
    expect(crc32(long)).toBe(reference(long));
    expect(crc32(long.subarray(5), crc32(long.subarray(0, 5)))).toBe(reference(long));
  });
});
