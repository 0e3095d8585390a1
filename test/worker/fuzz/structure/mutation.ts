import { join, type prng } from "../../../support/build";

export type Rng = ReturnType<typeof prng>;

/** One damaged copy of a file: what was done to it, and its bytes. */
export interface Mutant {
  what: string;
  bytes: Uint8Array;
  /**
   * The damage leaves a valid file of the same image (an IDAT split in two, a box given a 64-bit
   * size, fill bytes before a marker): a file the service takes must still be taken.
   */
  valid?: boolean;
}

/** One family of damage to a format's structure: null when the file has nothing it applies to. */
export type Mutation = (bytes: Uint8Array, rng: Rng) => Mutant | null;

export const pick = <T>(rng: Rng, items: readonly T[]): T => items[rng.int(items.length)]!;

/** One of `items`, or null when there are none. */
export const pickOr = <T>(rng: Rng, items: readonly T[]): T | null => (items.length ? pick(rng, items) : null);

/**
 * One of `items`, its kind drawn first, so that a file of many structures of one kind (IDAT
 * chunks, HEIF item boxes, Huffman tables) does not draw almost only those; null when there are none.
 */
export function pickKind<T>(rng: Rng, items: readonly T[], kind: (item: T) => string): T | null {
  const chosen = pickOr(rng, [...new Set(items.map(kind))]);
  return chosen === null
    ? null
    : pick(
        rng,
        items.filter((item) => kind(item) === chosen),
      );
}

/** `bytes` with `count` bytes at `at` replaced by `insert`. */
export const splice = (bytes: Uint8Array, at: number, count: number, ...insert: (Uint8Array | number[])[]) =>
  join(bytes.subarray(0, at), ...insert, bytes.subarray(at + count));

type Size = 1 | 2 | 3 | 4 | 8;

/**
 * Writes an unsigned integer of `size` bytes at `at`, in place, either byte order. The value is
 * taken modulo 2^(8 size), so -1 writes the largest.
 */
export function writeInto(out: Uint8Array, at: number, size: Size, value: number | bigint, little = false) {
  let v = BigInt.asUintN(size * 8, BigInt(value));
  for (let i = 0; i < size; i++, v >>= 8n) out[at + (little ? i : size - 1 - i)] = Number(v & 0xffn);
}

/** A copy of `bytes` with an unsigned integer written at `at` (see writeInto). */
export function write(bytes: Uint8Array, at: number, size: Size, value: number | bigint, little = false): Uint8Array {
  const out = bytes.slice();
  writeInto(out, at, size, value, little);
  return out;
}
