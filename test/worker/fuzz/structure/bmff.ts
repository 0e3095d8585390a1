import { ascii, u32be, u64be } from "../../../../src/bytes";
import { join, latin1, u32be as be32 } from "../../../support/build";
import { pick, pickKind, splice, write, writeInto, type Mutation } from "./mutation";

/** An ISO BMFF box (MP4, MOV, 3GP, HEIF, AVIF): its header is 8 bytes, or 16 with a 64-bit size. */
interface Box {
  type: string;
  start: number;
  header: number;
  end: number;
  parents: Box[];
}

/** Boxes of boxes, and where their children start after the box's header. */
const PLAIN = new Set([
  "moov",
  "trak",
  "mdia",
  "minf",
  "stbl",
  "udta",
  "edts",
  "dinf",
  "mvex",
  "moof",
  "traf",
  "mfra",
  "meco",
  "iprp",
  "ipco",
  "grpl",
  "sinf",
  "schi",
]);
function childrenAt(b: Uint8Array, box: Box): number | null {
  const body = box.start + box.header;
  if (PLAIN.has(box.type)) return body;
  // ISO's meta is a full box (version and flags, 0); QuickTime's is not.
  if (box.type === "meta") return u32be(b, body) === 0 ? body + 4 : body;
  if (box.type === "iinf") return body + (b[body] === 0 ? 6 : 8);
  if (box.type === "dref" || box.type === "stsd") return body + 8;
  return null;
}

/** Every box, down through the containers, as long as each fits in its parent. */
export function bmffBoxes(b: Uint8Array): Box[] {
  const out: Box[] = [];
  const walk = (start: number, end: number, parents: Box[]) => {
    for (let at = start; at + 8 <= end; ) {
      let size = u32be(b, at);
      let header = 8;
      if (size === 1) {
        if (at + 16 > end) return;
        size = u64be(b, at + 8);
        header = 16;
      } else if (size === 0) size = end - at;
      if (size < header || at + size > end) return;
      const box: Box = { type: ascii(b, at + 4, 4), start: at, header, end: at + size, parents };
      out.push(box);
      const children = childrenAt(b, box);
      if (children !== null && children <= box.end) walk(children, box.end, [...parents, box]);
      at += size;
    }
  };
  walk(0, b.length, []);
  return out;
}

const described = (x: Box) => `${[...x.parents, x].map((p) => p.type).join("/")} at ${x.start}`;
const sizeOf = (x: Box) => x.end - x.start;

/** A copy of `b` with the sizes of `box`'s parents changed by `delta` (those that say "to the end" stay so). */
function parentsResized(b: Uint8Array, box: Box, delta: number) {
  const out = b.slice();
  for (const p of box.parents) {
    if (p.header === 16) writeInto(out, p.start + 8, 8, sizeOf(p) + delta);
    else if (u32be(out, p.start) !== 0) writeInto(out, p.start, 4, sizeOf(p) + delta);
  }
  return out;
}

/** Writes a size into the box's own size field (the 64-bit one when it has one). */
const withSize = (b: Uint8Array, x: Box, size: number) =>
  x.header === 16 ? write(b, x.start + 8, 8, size) : write(b, x.start, 4, size);

/** Size 0, "to the end of the file": for a box inside another, past its parent. */
const sizeZero: Mutation = (b, rng) => {
  const x = pickKind(rng, bmffBoxes(b), (x) => x.type);
  return x && { what: `${described(x)} with size 0`, bytes: write(b, x.start, 4, 0) };
};

/** Size 1 with no 64-bit size after it: the first 8 bytes of its body are read as one. */
const sizeOne: Mutation = (b, rng) => {
  const x = pickKind(
    rng,
    bmffBoxes(b).filter((x) => x.header === 8),
    (x) => x.type,
  );
  return x && { what: `${described(x)} with size 1 and no 64-bit size`, bytes: write(b, x.start, 4, 1) };
};

/** Sizes under the header, of the header alone (its body read as siblings), one short, half. */
const tooSmall: Mutation = (b, rng) => {
  const x = pickKind(rng, bmffBoxes(b), (x) => x.type);
  if (!x) return null;
  const size = pick(rng, [2, 7, x.header, sizeOf(x) - 1, Math.floor(sizeOf(x) / 2)]);
  return { what: `${described(x)} with size ${size} instead of ${sizeOf(x)}`, bytes: withSize(b, x, size) };
};

/** One byte long, a header long, and the largest 32-bit sizes. */
const tooLarge: Mutation = (b, rng) => {
  const x = pickKind(rng, bmffBoxes(b), (x) => x.type);
  if (!x) return null;
  const size = pick(rng, [sizeOf(x) + 1, sizeOf(x) + 8, 0x7fffffff, 0xffffffff]);
  return { what: `${described(x)} with size ${size} instead of ${sizeOf(x)}`, bytes: withSize(b, x, size) };
};

/** A box that says it is larger than the box it is in. */
const largerThanParent: Mutation = (b, rng) => {
  const x = pickKind(
    rng,
    bmffBoxes(b).filter((x) => x.parents.length),
    (x) => x.type,
  );
  if (!x) return null;
  const parent = x.parents.at(-1)!;
  const size = parent.end - x.start + pick(rng, [1, 8, 4096]);
  return {
    what: `${described(x)} with size ${size}, past the end of its ${parent.type} at ${parent.end}`,
    bytes: withSize(b, x, size),
  };
};

/** 64-bit sizes: a box rewritten with one (the same file), or one of 2^40 and more, or under its 16-byte header. */
const largeSize: Mutation = (b, rng) => {
  const x = pickKind(rng, bmffBoxes(b), (x) => x.type);
  if (!x) return null;
  if (x.header === 8 && rng.int(2) === 0) {
    const header = join(be32(1), latin1(x.type), be32(0), be32(sizeOf(x) + 8));
    // ftyp must be first and plain for the file to be recognised at all.
    return {
      what: `${described(x)} with a 64-bit size`,
      bytes: splice(parentsResized(b, x, 8), x.start, 8, header),
      valid: x.type !== "ftyp",
    };
  }
  const size = pick(rng, [0n, 8n, 15n, 2n ** 40n, 2n ** 53n + 1n, 2n ** 64n - 1n]);
  const header = join(be32(1), latin1(x.type), new Uint8Array(8));
  writeInto(header, 8, 8, size);
  return { what: `${described(x)} with a 64-bit size of ${size}`, bytes: splice(b, x.start, x.header, header) };
};

/** ftyp: the major brand of another format or of none, no compatible brands, an odd size, gone, twice, last. */
const ftyp: Mutation = (b, rng) => {
  const x = bmffBoxes(b).find((x) => x.type === "ftyp" && x.header === 8 && sizeOf(x) >= 16);
  if (!x) return null;
  const major = ascii(b, x.start + 8, 4);
  return pick(rng, [
    () => {
      const brand = pick(
        rng,
        ["qt  ", "heic", "mif1", "avif", "isom", "M4V ", "3gp4", "crx ", "\0\0\0\0"].filter((v) => v !== major),
      );
      return {
        what: `ftyp with major brand ${JSON.stringify(brand)} instead of ${JSON.stringify(major)}`,
        bytes: splice(b, x.start + 8, 4, latin1(brand)),
      };
    },
    () => ({
      what: "ftyp without compatible brands",
      bytes: splice(write(b, x.start, 4, 16), x.start + 16, sizeOf(x) - 16),
    }),
    () => {
      const size = pick(rng, [12, 17, sizeOf(x) + 2]);
      return { what: `ftyp with size ${size}`, bytes: write(b, x.start, 4, size) };
    },
    () => ({ what: "ftyp removed", bytes: splice(b, x.start, sizeOf(x)) }),
    () => ({ what: "ftyp twice", bytes: splice(b, x.end, 0, b.subarray(x.start, x.end)) }),
    () => ({ what: "ftyp moved to the end", bytes: join(splice(b, x.start, sizeOf(x)), b.subarray(x.start, x.end)) }),
  ])();
};

/** A box gone, its parents' sizes made to fit. */
const removed: Mutation = (b, rng) => {
  const x = pickKind(rng, bmffBoxes(b), (x) => x.type);
  return x && { what: `${described(x)} removed`, bytes: splice(parentsResized(b, x, -sizeOf(x)), x.start, sizeOf(x)) };
};

/** A box twice (two movies, two meta boxes, two sizes for an image), its parents' sizes made to fit. */
const duplicated: Mutation = (b, rng) => {
  const x = pickKind(rng, bmffBoxes(b), (x) => x.type);
  return (
    x && {
      what: `${described(x)} twice`,
      bytes: splice(parentsResized(b, x, sizeOf(x)), x.end, 0, b.subarray(x.start, x.end)),
    }
  );
};

/** A box's type: none, one that is skipped, one with an identifier after its size, another container's. */
const type: Mutation = (b, rng) => {
  const x = pickKind(rng, bmffBoxes(b), (x) => x.type);
  if (!x) return null;
  const value = pick(
    rng,
    ["\0\0\0\0", "free", "uuid", "moov", "meta", "cmov", "mdat", "ftyp", "\xa9xyz"].filter((t) => t !== x.type),
  );
  return { what: `${described(x)} as ${JSON.stringify(value)}`, bytes: splice(b, x.start + 4, 4, latin1(value)) };
};

/** Counts and sizes inside boxes, from their body (full boxes: after version and flags); negative from their end. */
const FIELDS: Record<string, [field: string, offset: number, size: 2 | 4][]> = {
  stco: [["entry count", 4, 4]],
  co64: [["entry count", 4, 4]],
  stss: [["entry count", 4, 4]],
  stts: [["entry count", 4, 4]],
  stsc: [["entry count", 4, 4]],
  ctts: [["entry count", 4, 4]],
  elst: [["entry count", 4, 4]],
  dref: [["entry count", 4, 4]],
  stsd: [["entry count", 4, 4]],
  stsz: [
    ["sample size", 4, 4],
    ["sample count", 8, 4],
  ],
  ipma: [["entry count", 4, 4]],
  iinf: [["entry count", 4, 2]],
  iloc: [["item count", 6, 2]],
  pitm: [["primary item", 4, 2]],
  ispe: [
    ["width", 4, 4],
    ["height", 8, 4],
  ],
  tkhd: [
    ["width", -8, 4],
    ["height", -4, 4],
  ],
  mvhd: [["timescale", 12, 4]],
  mdhd: [["timescale", 12, 4]],
};

const fields: Mutation = (b, rng) => {
  const x = pickKind(
    rng,
    bmffBoxes(b).filter((x) => x.type in FIELDS && sizeOf(x) >= x.header + 12),
    (x) => x.type,
  );
  if (!x) return null;
  const [field, offset, size] = pick(rng, FIELDS[x.type]!);
  const at = offset < 0 ? x.end + offset : x.start + x.header + offset;
  const value = pick(rng, size === 2 ? [0, 1, 0xffff] : [0, 1, 30_001, 0x7fffffff, 0xffffffff]);
  return { what: `${described(x)} with ${field} ${value}`, bytes: write(b, at, size, value) };
};

export const BMFF: Record<string, Mutation> = {
  sizeZero,
  sizeOne,
  tooSmall,
  tooLarge,
  largerThanParent,
  largeSize,
  ftyp,
  removed,
  duplicated,
  type,
  fields,
};
