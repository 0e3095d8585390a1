import { ascii, u32be } from "../../../../src/bytes";
import { crc32 } from "../../../../src/media/strip/crc32";
import { actl, fctl, join, latin1, pngChunk } from "../../../support/build";
import { pick, pickKind, pickOr, splice, write, writeInto, type Mutation, type Rng } from "./mutation";

/** A chunk: its length field at `start`, its data from `data`, its CRC ending at `end`. */
interface Chunk {
  type: string;
  start: number;
  length: number;
  data: number;
  end: number;
}

/** The chunks of a PNG after its signature, to IEND or to where its structure breaks. */
export function pngChunks(b: Uint8Array): Chunk[] {
  const out: Chunk[] = [];
  for (let at = 8; at + 12 <= b.length; ) {
    const length = u32be(b, at);
    const end = at + 12 + length;
    if (end > b.length) break;
    const type = ascii(b, at + 4, 4);
    out.push({ type, start: at, length, data: at + 8, end });
    at = end;
    if (type === "IEND") break;
  }
  return out;
}

const described = (c: Chunk) => `${c.type} at ${c.start}`;

/** `bytes` with the CRC of the chunk at `start` (whose length field says `length`) made right again. */
function fixCrc(bytes: Uint8Array, start: number, length: number) {
  writeInto(bytes, start + 8 + length, 4, crc32(bytes.subarray(start + 4, start + 8 + length)));
  return bytes;
}

/** Half the time the CRC is made right, so that what decides is the damage itself rather than the checksum. */
const maybeFixed = (rng: Rng, bytes: Uint8Array, c: Chunk): [Uint8Array, string] =>
  rng.int(2) === 0 ? [fixCrc(bytes, c.start, c.length), ", CRC made right"] : [bytes, ""];

/** Length fields: zero, one short or long, at and past 2^31, the bytes left in the file. */
const length: Mutation = (b, rng) => {
  const c = pickKind(rng, pngChunks(b), (c) => c.type);
  if (!c) return null;
  const value = pick(rng, [
    0,
    Math.max(0, c.length - 1),
    c.length + 1,
    0x7fffffff,
    0x80000000,
    0xffffffff,
    b.length - c.data,
  ]);
  return { what: `${described(c)} with length ${value} instead of ${c.length}`, bytes: write(b, c.start, 4, value) };
};

/** Chunk types: critical made ancillary and back, an unknown critical chunk, letters that are not letters. */
const type: Mutation = (b, rng) => {
  const c = pickKind(rng, pngChunks(b), (c) => c.type);
  if (!c) return null;
  const flipped = String.fromCharCode(c.type.charCodeAt(0) ^ 0x20) + c.type.slice(1);
  const value = pick(
    rng,
    [flipped, "ZZZZ", "zzzz", "IH\0R", "1234", "IDAT", "IHDR", "IEND"].filter((t) => t !== c.type),
  );
  const [bytes, fixed] = maybeFixed(rng, splice(b, c.start + 4, 4, latin1(value)), c);
  return { what: `${described(c)} as ${JSON.stringify(value)}${fixed}`, bytes };
};

const crc: Mutation = (b, rng) => {
  const c = pickKind(rng, pngChunks(b), (c) => c.type);
  if (!c) return null;
  const at = c.data + c.length + rng.int(4);
  return { what: `${described(c)} with a wrong CRC`, bytes: write(b, at, 1, b[at]! ^ (1 << rng.int(8))) };
};

/** IHDR's fields: sizes from none to 2^32 - 1, and bit depths, colour types and methods no PNG has. */
const header: Mutation = (b, rng) => {
  const c = pngChunks(b).find((x) => x.type === "IHDR" && x.length === 13);
  if (!c) return null;
  const [field, offset, size, values] = pick(rng, [
    ["width", 0, 4, [0, 1, 30_000, 30_001, 0x7fffffff, 0x80000000, 0xffffffff]],
    ["height", 4, 4, [0, 1, 30_000, 30_001, 0x7fffffff, 0x80000000, 0xffffffff]],
    ["bit depth", 8, 1, [0, 3, 7, 9, 16, 255]],
    ["colour type", 9, 1, [1, 5, 7, 255]],
    ["compression method", 10, 1, [1, 255]],
    ["filter method", 11, 1, [1, 255]],
    ["interlace method", 12, 1, [1, 2, 255]],
  ] as const);
  const current = size === 4 ? u32be(b, c.data + offset) : b[c.data + offset];
  const value = pick(
    rng,
    values.filter((v) => v !== current),
  );
  const [bytes, fixed] = maybeFixed(rng, write(b, c.data + offset, size, value), c);
  return { what: `IHDR with ${field} ${value}${fixed}`, bytes };
};

const idats = (b: Uint8Array) => pngChunks(b).filter((c) => c.type === "IDAT");

/** An IDAT split in two at any point, both CRCs right: the same image. */
const idatSplit: Mutation = (b, rng) => {
  const c = pickOr(rng, idats(b));
  if (!c) return null;
  const cut = rng.int(c.length + 1);
  const data = b.subarray(c.data, c.data + c.length);
  return {
    what: `${described(c)} split at ${cut} of its ${c.length} bytes`,
    bytes: splice(
      b,
      c.start,
      c.end - c.start,
      pngChunk("IDAT", data.subarray(0, cut)),
      pngChunk("IDAT", data.subarray(cut)),
    ),
    valid: true,
  };
};

/** An IDAT twice: a compressed stream with more after its end. */
const idatDuplicated: Mutation = (b, rng) => {
  const c = pickOr(rng, idats(b));
  return c && { what: `${described(c)} twice`, bytes: splice(b, c.end, 0, b.subarray(c.start, c.end)) };
};

/** One IDAT gone, or all of them. */
const idatRemoved: Mutation = (b, rng) => {
  const all = idats(b);
  if (!all.length) return null;
  if (all.length === 1 || rng.int(2) === 0)
    return { what: "every IDAT removed", bytes: join(b.subarray(0, all[0]!.start), b.subarray(all.at(-1)!.end)) };
  const c = pick(rng, all);
  return { what: `${described(c)} removed`, bytes: splice(b, c.start, c.end - c.start) };
};

/** IEND missing, IEND with data, a chunk after IEND (which nothing reads: the same image). */
const imageEnd: Mutation = (b, rng) => {
  const c = pngChunks(b).find((x) => x.type === "IEND");
  if (!c) return null;
  return pick(rng, [
    () => ({ what: "IEND removed", bytes: splice(b, c.start, c.end - c.start) }),
    () => ({
      what: "IEND with 4 bytes of data",
      bytes: splice(b, c.start, c.end - c.start, pngChunk("IEND", [1, 2, 3, 4])),
    }),
    () => ({
      what: "a tEXt chunk after IEND",
      bytes: join(b.subarray(0, c.end), pngChunk("tEXt", latin1("Comment\0after the end")), b.subarray(c.end)),
      valid: true,
    }),
  ])();
};

/** Chunks out of order: IHDR not first, twice, PLTE after the image data. */
const order: Mutation = (b, rng) => {
  const chunks = pngChunks(b);
  const ihdr = chunks[0]?.type === "IHDR" ? chunks[0] : undefined;
  const lastIdat = idats(b).at(-1);
  const plte = chunks.find((c) => c.type === "PLTE");
  const options: (() => { what: string; bytes: Uint8Array })[] = [];
  const move = (c: Chunk, to: number) => {
    const copy = b.subarray(c.start, c.end);
    return to > c.start
      ? join(b.subarray(0, c.start), b.subarray(c.end, to), copy, b.subarray(to))
      : join(b.subarray(0, to), copy, b.subarray(to, c.start), b.subarray(c.end));
  };
  if (ihdr && lastIdat)
    options.push(() => ({ what: "IHDR moved after the last IDAT", bytes: move(ihdr, lastIdat.end) }));
  if (ihdr)
    options.push(() => ({ what: "IHDR twice", bytes: splice(b, ihdr.end, 0, b.subarray(ihdr.start, ihdr.end)) }));
  if (plte && lastIdat && plte.start < lastIdat.start)
    options.push(() => ({ what: "PLTE moved after the last IDAT", bytes: move(plte, lastIdat.end) }));
  if (lastIdat && chunks.length > 1)
    options.push(() => ({ what: "the last IDAT moved right after the signature", bytes: move(lastIdat, 8) }));
  return options.length ? pick(rng, options)() : null;
};

/** Animation chunks after IHDR: a frame outside the image or without a size, frame counts of none and of 2^32 - 1. */
const animation: Mutation = (b, rng) => {
  const ihdr = pngChunks(b).find((x) => x.type === "IHDR" && x.length === 13);
  if (!ihdr) return null;
  const [width, height] = [u32be(b, ihdr.data), u32be(b, ihdr.data + 4)];
  const [what, chunks] = pick(rng, [
    [`a frame of ${width + 1}x${height}, wider than the image`, [actl(1), fctl(0, width + 1, height)]],
    [`a frame at ${width},0, outside the image`, [actl(1), fctl(0, 1, 1, width, 0)]],
    ["a frame without a size", [actl(1), fctl(0, 0, 0)]],
    ["a frame of 2^32 - 1 at 1,1", [actl(1), fctl(0, 0xffffffff, 0xffffffff, 1, 1)]],
    ["acTL of no frames", [actl(0)]],
    ["acTL of 2^32 - 1 frames", [actl(0xffffffff)]],
    ["fdAT without a frame", [pngChunk("fdAT", [0, 0, 0, 1, 0x78, 0x9c])]],
  ] as const);
  return { what: `${what} after IHDR`, bytes: splice(b, ihdr.end, 0, ...chunks) };
};

export const PNG: Record<string, Mutation> = {
  length,
  type,
  crc,
  header,
  idatSplit,
  idatDuplicated,
  idatRemoved,
  imageEnd,
  order,
  animation,
};
