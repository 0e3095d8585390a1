import { ascii, u16le } from "../../../../src/bytes";
import { join } from "../../../support/build";
import { pick, pickKind, pickOr, splice, write, type Mutation, type Rng } from "./mutation";

/** A block after the logical screen: an extension or an image, each ended by its sub-blocks' terminator, or the trailer. */
interface Block {
  kind: "extension" | "image" | "trailer";
  start: number;
  end: number;
  /** Where each sub-block's size byte is, the terminator (0) last. */
  subBlocks: number[];
  /** An image's LZW minimum code size. */
  lzw?: number;
}

const colourTable = (flags: number) => (flags & 0x80 ? 3 * 2 ** ((flags & 7) + 1) : 0);

function subBlocks(b: Uint8Array, from: number): { positions: number[]; end: number } | null {
  const positions: number[] = [];
  for (let at = from; at < b.length; ) {
    positions.push(at);
    const size = b[at]!;
    at += 1 + size;
    if (size === 0) return { positions, end: at };
  }
  return null;
}

/** The blocks of a GIF, to its trailer or to where its structure breaks. */
export function gifBlocks(b: Uint8Array): Block[] {
  if (b.length < 13 || ascii(b, 0, 3) !== "GIF") return [];
  const out: Block[] = [];
  for (let at = 13 + colourTable(b[10]!); at < b.length; ) {
    const introducer = b[at]!;
    if (introducer === 0x3b) {
      out.push({ kind: "trailer", start: at, end: at + 1, subBlocks: [] });
      break;
    }
    const image = introducer === 0x2c;
    if (!image && introducer !== 0x21) break;
    const lzw = image ? at + 10 + colourTable(b[at + 9] ?? 0) : undefined;
    const data = subBlocks(b, image ? lzw! + 1 : at + 2);
    if (!data) break;
    out.push({ kind: image ? "image" : "extension", start: at, end: data.end, subBlocks: data.positions, lzw });
    at = data.end;
  }
  return out;
}

const LABELS: Record<number, string> = {
  0xf9: "graphic control",
  0xfe: "comment",
  0xff: "application",
  0x01: "plain text",
};
const described = (b: Uint8Array, x: Block) =>
  `${x.kind === "extension" ? `${LABELS[b[x.start + 1]!] ?? "unknown"} extension` : x.kind} at ${x.start}`;
const blocksOf = (b: Uint8Array) => gifBlocks(b).filter((x) => x.kind !== "trailer");
const anyBlock = (b: Uint8Array, rng: Rng, list: Block[]) =>
  pickKind(rng, list, (x) => (x.kind === "extension" ? `${x.kind} ${b[x.start + 1]}` : x.kind));

/** A sub-block's size: 0 (an early end, the rest read as blocks), the largest, one more or less than its data. */
const subBlockSize: Mutation = (b, rng) => {
  const x = anyBlock(
    b,
    rng,
    blocksOf(b).filter((x) => x.subBlocks.length > 1),
  );
  if (!x) return null;
  const at = pick(rng, x.subBlocks.slice(0, -1));
  const value = pick(
    rng,
    [0, 255, b[at]! + 1, b[at]! - 1].filter((v) => v >= 0 && v <= 255 && v !== b[at]),
  );
  return {
    what: `a sub-block of ${described(b, x)} at ${at} with size ${value} instead of ${b[at]}`,
    bytes: write(b, at, 1, value),
  };
};

/** The logical screen: none, one pixel (so every frame is larger), past the side limit, the largest. */
const screen: Mutation = (b, rng) => {
  if (b.length < 13) return null;
  const [field, offset] = pick(rng, [
    ["width", 6],
    ["height", 8],
  ] as const);
  const value = pick(
    rng,
    [0, 1, 30_001, 0xffff].filter((v) => v !== u16le(b, offset)),
  );
  return {
    what: `logical screen ${field} ${value} instead of ${u16le(b, offset)}`,
    bytes: write(b, offset, 2, value, true),
  };
};

/** An image's place and size: none, past the side limit, the largest, outside the screen. */
const frame: Mutation = (b, rng) => {
  const x = pickOr(
    rng,
    gifBlocks(b).filter((x) => x.kind === "image"),
  );
  if (!x) return null;
  const [field, offset] = pick(rng, [
    ["left", 1],
    ["top", 3],
    ["width", 5],
    ["height", 7],
  ] as const);
  const value = pick(
    rng,
    [0, 1, 30_000, 0xffff].filter((v) => v !== u16le(b, x.start + offset)),
  );
  return { what: `${described(b, x)} with ${field} ${value}`, bytes: write(b, x.start + offset, 2, value, true) };
};

/** A block's sub-blocks without their terminator: the next block read as data, or the file ending inside them. */
const unterminated: Mutation = (b, rng) => {
  const x = anyBlock(b, rng, blocksOf(b));
  if (!x) return null;
  const terminator = x.subBlocks.at(-1)!;
  return rng.int(2) === 0
    ? { what: `${described(b, x)} without its terminator`, bytes: splice(b, terminator, 1) }
    : { what: `the file ending inside ${described(b, x)}`, bytes: b.slice(0, terminator) };
};

/** The LZW minimum code size: from none to past the 12-bit codes GIF has. */
const lzw: Mutation = (b, rng) => {
  const x = pickOr(
    rng,
    gifBlocks(b).filter((x) => x.lzw !== undefined),
  );
  if (!x) return null;
  const value = pick(
    rng,
    [0, 1, 2, 8, 11, 12, 13, 255].filter((v) => v !== b[x.lzw!]),
  );
  return {
    what: `${described(b, x)} with LZW minimum code size ${value} instead of ${b[x.lzw!]}`,
    bytes: write(b, x.lzw!, 1, value),
  };
};

/** Colour table flags against what follows: a table announced that is not there, one there but not announced, another size. */
const colourTables: Mutation = (b, rng) => {
  if (b.length < 13) return null;
  const image = pickOr(
    rng,
    gifBlocks(b).filter((x) => x.kind === "image"),
  );
  const local = image !== null && rng.int(2) === 0;
  const flagsAt = local ? image.start + 9 : 10;
  const flags = b[flagsAt]!;
  const [what, value] = pick(rng, [
    flags & 0x80 ? ["not announced", flags & ~0x80] : ["announced with 256 colours", flags | 0x87],
    ["of another size", (flags & ~7) | ((flags + 1) & 7)],
  ] as const);
  return {
    what: `${local ? `the colour table of ${described(b, image)}` : "the global colour table"} ${what}`,
    bytes: write(b, flagsAt, 1, value),
  };
};

/** The trailer: gone, right after the screen (no image at all), with bytes after it (which nothing reads: the same image). */
const trailer: Mutation = (b, rng) => {
  const blocks = gifBlocks(b);
  const end = blocks.find((x) => x.kind === "trailer");
  const first = blocks[0];
  const options: (() => { what: string; bytes: Uint8Array; valid?: boolean })[] = [];
  if (end) options.push(() => ({ what: "the trailer removed", bytes: splice(b, end.start, 1) }));
  if (first)
    options.push(() => ({ what: "a trailer right after the screen", bytes: splice(b, first.start, 0, [0x3b]) }));
  if (end)
    options.push(() => ({ what: "bytes after the trailer", bytes: join(b, [0x21, 0xfe, 0xff, 1, 2, 3]), valid: true }));
  return options.length ? pick(rng, options)() : null;
};

const removed: Mutation = (b, rng) => {
  const x = anyBlock(b, rng, blocksOf(b));
  return x && { what: `${described(b, x)} removed`, bytes: splice(b, x.start, x.end - x.start) };
};

const duplicated: Mutation = (b, rng) => {
  const x = anyBlock(b, rng, blocksOf(b));
  return x && { what: `${described(b, x)} twice`, bytes: splice(b, x.end, 0, b.subarray(x.start, x.end)) };
};

/** A block's introducer or an extension's label: what no GIF has, or another kind of block. */
const introducer: Mutation = (b, rng) => {
  const x = anyBlock(b, rng, blocksOf(b));
  if (!x) return null;
  if (x.kind === "extension" && rng.int(2) === 0) {
    const label = pick(
      rng,
      [0x00, 0x01, 0xf9, 0xfe, 0xff].filter((v) => v !== b[x.start + 1]),
    );
    return { what: `${described(b, x)} with label 0x${label.toString(16)}`, bytes: write(b, x.start + 1, 1, label) };
  }
  const value = pick(
    rng,
    [0x00, 0x20, 0x2c, 0x21, 0x3a, 0xff].filter((v) => v !== b[x.start]),
  );
  return { what: `${described(b, x)} with introducer 0x${value.toString(16)}`, bytes: write(b, x.start, 1, value) };
};

export const GIF: Record<string, Mutation> = {
  subBlockSize,
  screen,
  frame,
  unterminated,
  lzw,
  colourTables,
  trailer,
  removed,
  duplicated,
  introducer,
};
