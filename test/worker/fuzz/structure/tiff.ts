import { ascii, u16be, u16le, u32be, u32le } from "../../../../src/bytes";
import { join, u16be as be16, u16le as le16, u32be as be32, u32le as le32 } from "../../../support/build";
import { pick, pickOr, splice, write, writeInto, type Mutation } from "./mutation";

/** A classic TIFF directory: its entry count at `at`, then 12-byte entries, then the next directory's offset at `next`. */
interface Ifd {
  at: number;
  count: number;
  next: number;
}

interface Tiff {
  little: boolean;
  ifds: Ifd[];
}

/** The header and the chain of directories of a classic TIFF, as far as they lie in the file and do not repeat. */
export function tiffStructure(b: Uint8Array): Tiff | null {
  if (b.length < 8 || !["II", "MM"].includes(ascii(b, 0, 2))) return null;
  const little = b[0] === 0x49;
  const u16 = little ? u16le : u16be;
  const u32 = little ? u32le : u32be;
  const ifds: Ifd[] = [];
  if (u16(b, 2) !== 42) return { little, ifds };
  const seen = new Set<number>();
  for (let offset = u32(b, 4); offset && offset + 2 <= b.length && !seen.has(offset) && ifds.length < 64; ) {
    seen.add(offset);
    const count = u16(b, offset);
    const next = offset + 2 + 12 * count;
    if (next > b.length) break;
    ifds.push({ at: offset, count, next });
    offset = next + 4 <= b.length ? u32(b, next) : 0;
  }
  return { little, ifds };
}

const entriesOf = (t: Tiff) =>
  t.ifds.flatMap((ifd) => Array.from({ length: ifd.count }, (_, i) => ifd.at + 2 + 12 * i));

/** The directories whose next-directory offset lies within the file. */
const chained = (t: Tiff, b: Uint8Array) => t.ifds.filter((x) => x.next + 4 <= b.length);

/** The first directory's offset: zero, inside the header, odd, at and past the end, the largest. */
const firstOffset: Mutation = (b, rng) => {
  const t = tiffStructure(b);
  if (!t?.ifds.length) return null;
  const value = pick(rng, [0, 2, 4, 7, 8, t.ifds[0]!.at + 1, b.length - 1, b.length, 0x7fffffff, 0xffffffff]);
  return {
    what: `first directory offset ${value} instead of ${t.ifds[0]!.at}`,
    bytes: write(b, 4, 4, value, t.little),
  };
};

/** A next-directory offset pointing back: to itself, to the first directory, into the header. */
const backwards: Mutation = (b, rng) => {
  const t = tiffStructure(b);
  const ifd = t && pickOr(rng, chained(t, b));
  if (!t || !ifd) return null;
  const [where, value] = pick(rng, [
    ["itself", ifd.at],
    ["the first directory", t.ifds[0]!.at],
    ["the header's end", 8],
    ["inside the header", 4],
  ] as const);
  return {
    what: `directory at ${ifd.at} followed by ${where} (${value})`,
    bytes: write(b, ifd.next, 4, value, t.little),
  };
};

/** A next-directory offset at or past the end of the file, or the largest. */
const outOfRange: Mutation = (b, rng) => {
  const t = tiffStructure(b);
  const ifd = t && pickOr(rng, chained(t, b));
  if (!t || !ifd) return null;
  const value = pick(rng, [b.length - 2, b.length, b.length + 4096, 0xffffffff]);
  return { what: `directory at ${ifd.at} followed by one at ${value}`, bytes: write(b, ifd.next, 4, value, t.little) };
};

/** A directory's entry count: none, one more, as many as the file could hold, the largest. */
const entryCount: Mutation = (b, rng) => {
  const t = tiffStructure(b);
  const ifd = t && pickOr(rng, t.ifds);
  if (!t || !ifd) return null;
  const value = pick(rng, [0, 1, ifd.count + 1, Math.min(0xffff, Math.floor(b.length / 12)), 0xffff]);
  return {
    what: `directory at ${ifd.at} with ${value} entries instead of ${ifd.count}`,
    bytes: write(b, ifd.at, 2, value, t.little),
  };
};

/** An entry's tag, type, value count or value offset: what no TIFF has, or pointing out of the file. */
const entry: Mutation = (b, rng) => {
  const t = tiffStructure(b);
  const at = t && pickOr(rng, entriesOf(t));
  if (!t || at === null) return null;
  const [field, offset, size, values] = pick(rng, [
    ["tag", 0, 2, [256, 257, 330, 0xffff]],
    ["type", 2, 2, [0, 13, 17, 0xffff]],
    ["value count", 4, 4, [0, 0x40000000, 0xffffffff]],
    ["value or offset", 8, 4, [0, b.length, 0xffffffff]],
  ] as const);
  const value = pick(rng, values);
  return { what: `entry at ${at} with ${field} ${value}`, bytes: write(b, at + offset, size, value, t.little) };
};

/** ImageWidth and ImageLength: none, one pixel, past the side limit, the largest of their type. */
const dimensions: Mutation = (b, rng) => {
  const t = tiffStructure(b);
  const u16 = t?.little ? u16le : u16be;
  const at =
    t &&
    pickOr(
      rng,
      entriesOf(t).filter((at) => [256, 257].includes(u16(b, at))),
    );
  if (!t || at === null) return null;
  const short = u16(b, at + 2) === 3;
  const current = short ? u16(b, at + 8) : (t.little ? u32le : u32be)(b, at + 8);
  const value = pick(
    rng,
    [0, 1, 30_001, short ? 0xffff : 0xffffffff].filter((v) => v !== current),
  );
  return {
    what: `${u16(b, at) === 256 ? "ImageWidth" : "ImageLength"} ${value}`,
    bytes: write(b, at + 8, short ? 2 : 4, value, t.little),
  };
};

/** An entry turned into SubIFDs: one or many directories, at the directory itself, in the header, past the end. */
const subIfds: Mutation = (b, rng) => {
  const t = tiffStructure(b);
  const ifd =
    t &&
    pickOr(
      rng,
      t.ifds.filter((x) => x.count > 0),
    );
  if (!t || !ifd) return null;
  const at = ifd.at + 2 + 12 * rng.int(ifd.count);
  const count = pick(rng, [1, 2, 257, 0xffffffff]);
  const [where, target] = pick(rng, [
    ["the directory itself", ifd.at],
    ["the header", 0],
    ["past the end", b.length + 12],
  ] as const);
  const out = b.slice();
  writeInto(out, at, 2, 330, t.little);
  writeInto(out, at + 2, 2, 4, t.little);
  writeInto(out, at + 4, 4, count, t.little);
  writeInto(out, at + 8, 4, target, t.little);
  return { what: `entry at ${at} as ${count} SubIFDs at ${where}`, bytes: out };
};

/** More directories than any image has, chained after the last one, or two that point at each other. */
const manyDirectories: Mutation = (b, rng) => {
  const t = tiffStructure(b);
  const last = t?.ifds.at(-1);
  if (!t || !last || last.next + 4 > b.length) return null;
  const [u16, u32] = t.little ? [le16, le32] : [be16, be32];
  const count = pick(rng, [2, 300]);
  const loop = count === 2;
  // Each added directory: no entries, then the offset of the next one (the last: none, or the first for a loop).
  const chain = Array.from({ length: count }, (_, i) =>
    join(u16(0), u32(i + 1 < count ? b.length + 6 * (i + 1) : loop ? b.length : 0)),
  );
  const out = join(b, ...chain);
  writeInto(out, last.next, 4, b.length, t.little);
  return { what: loop ? "two more directories that point at each other" : `${count} more directories`, bytes: out };
};

/** BigTIFF: its version alone, or its whole header (the directories then read with 8-byte offsets), with offset sizes it never has. */
const bigTiff: Mutation = (b, rng) => {
  const t = tiffStructure(b);
  if (!t) return null;
  const u16 = t.little ? le16 : be16;
  const first = t.little ? u32le(b, 4) : u32be(b, 4);
  const offsetSize = pick(rng, [8, 8, 4, 0, 16]);
  return pick(rng, [
    () => ({ what: "version 43 (BigTIFF) in a classic header", bytes: write(b, 2, 2, 43, t.little) }),
    () => {
      const header = join(b.subarray(0, 2), u16(43), u16(offsetSize), u16(0), new Uint8Array(8));
      writeInto(header, 8, 8, first + 8, t.little);
      return { what: `a BigTIFF header with offset size ${offsetSize}`, bytes: join(header, b.subarray(8)) };
    },
  ])();
};

/** The byte order: swapped (every field then read backwards), or mixed. */
const byteOrder: Mutation = (b, rng) => {
  const t = tiffStructure(b);
  if (!t) return null;
  const order = pick(rng, [t.little ? "MM" : "II", "IM", "MI"]);
  return {
    what: `byte order ${order}`,
    bytes: splice(
      b,
      0,
      2,
      Uint8Array.from(order, (c) => c.charCodeAt(0)),
    ),
  };
};

export const TIFF: Record<string, Mutation> = {
  firstOffset,
  backwards,
  outOfRange,
  entryCount,
  entry,
  dimensions,
  subIfds,
  manyDirectories,
  bigTiff,
  byteOrder,
};
