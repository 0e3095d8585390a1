import { ascii, u24le, u32le } from "../../../../src/bytes";
import { latin1, vp8x } from "../../../support/build";
import { pick, pickKind, pickOr, splice, write, writeInto, type Mutation } from "./mutation";

/** A RIFF chunk (WebP, AVI): 8 bytes of id and little-endian size, its data, a pad byte after odd data. */
interface Chunk {
  id: string;
  start: number;
  size: number;
  end: number;
  parents: Chunk[];
}

/** Chunks of chunks: after the 4-byte form of RIFF and LIST, and after ANMF's 16 bytes of frame fields. */
const CHILDREN_AT: Record<string, number> = { RIFF: 12, LIST: 12, ANMF: 24 };

/** The file's RIFF chunk, then every chunk within it, as long as each fits in its parent. */
export function riffChunks(b: Uint8Array): Chunk[] {
  if (b.length < 12 || ascii(b, 0, 4) !== "RIFF") return [];
  const root: Chunk = {
    id: "RIFF",
    start: 0,
    size: u32le(b, 4),
    end: Math.min(b.length, 8 + u32le(b, 4)),
    parents: [],
  };
  const out = [root];
  const walk = (parent: Chunk) => {
    const parents = [...parent.parents, parent];
    for (let at = parent.start + CHILDREN_AT[parent.id]!; at + 8 <= parent.end; ) {
      const size = u32le(b, at + 4);
      if (at + 8 + size > parent.end) return;
      const chunk: Chunk = {
        id: ascii(b, at, 4),
        start: at,
        size,
        end: Math.min(parent.end, at + 8 + size + (size & 1)),
        parents,
      };
      out.push(chunk);
      if (chunk.id in CHILDREN_AT && size >= CHILDREN_AT[chunk.id]! - 8) walk(chunk);
      at = chunk.end;
    }
  };
  walk(root);
  return out;
}

const described = (c: Chunk) => `${[...c.parents, c].map((p) => p.id.trim()).join("/")} at ${c.start}`;
const inner = (b: Uint8Array) => riffChunks(b).slice(1);

/** A copy of `b` with the sizes of `chunk`'s parents changed by `delta`. */
function parentsResized(b: Uint8Array, chunk: Chunk, delta: number) {
  const out = b.slice();
  for (const p of chunk.parents) writeInto(out, p.start + 4, 4, p.size + delta, true);
  return out;
}

/** The RIFF size: under its form, one byte short or long, odd, the largest, cutting the first chunk. */
const riffSize: Mutation = (b, rng) => {
  const [root, first] = riffChunks(b);
  if (!root) return null;
  const value = pick(rng, [
    0,
    3,
    4,
    root.size - 1,
    root.size + 1,
    root.size + 2,
    0x7fffffff,
    0xffffffff,
    first ? first.end - 9 : 5,
  ]);
  return { what: `RIFF size ${value} instead of ${root.size}`, bytes: write(b, 4, 4, value, true) };
};

/** A chunk's size: none, one short (odd, so the last byte becomes padding), one long, the largest, past its parent. */
const chunkSize: Mutation = (b, rng) => {
  const c = pickKind(rng, inner(b), (c) => c.id);
  if (!c) return null;
  const parent = c.parents.at(-1)!;
  const value = pick(rng, [
    0,
    Math.max(0, c.size - 1),
    c.size + 1,
    c.size + 2,
    0x7fffffff,
    0xffffffff,
    parent.end - c.start + 2,
  ]);
  return {
    what: `${described(c)} with size ${value} instead of ${c.size}`,
    bytes: write(b, c.start + 4, 4, value, true),
  };
};

/** Padding: an odd chunk's pad byte gone, a pad byte after an even chunk, the parents' sizes made to fit or not. */
const padding: Mutation = (b, rng) => {
  const c = pickKind(rng, inner(b), (c) => c.id);
  if (!c) return null;
  const fit = rng.int(2) === 0;
  const hasPad = c.size & 1 && c.end === c.start + 9 + c.size;
  const delta = hasPad ? -1 : 1;
  const bytes = splice(fit ? parentsResized(b, c, delta) : b, c.start + 8 + c.size, hasPad ? 1 : 0, hasPad ? [] : [0]);
  return {
    what: `${described(c)} ${hasPad ? "without its pad byte" : "with a pad byte after its even data"}${fit ? ", its parents' sizes made to fit" : ""}`,
    bytes,
  };
};

/** VP8X: the canvas from one pixel to past the side limit, its own size, flags for what is not there (a VP8X is put in first where there is none). */
const canvas: Mutation = (b, rng) => {
  if (b.length < 12 || ascii(b, 8, 4) !== "WEBP") return null;
  let bytes = b;
  let added = "";
  if (ascii(b, 12, 4) !== "VP8X") {
    bytes = splice(
      parentsResized(b, { id: "VP8X", start: 12, size: 0, end: 12, parents: [riffChunks(b)[0]!] }, 18),
      12,
      0,
      vp8x(1, 1),
    );
    added = "a VP8X added, ";
  }
  const [what, mutate] = pick(rng, [
    ["canvas width", (v: number) => write(bytes, 24, 3, v - 1, true)],
    ["canvas height", (v: number) => write(bytes, 27, 3, v - 1, true)],
    ["VP8X size", (v: number) => write(bytes, 16, 4, v, true)],
    ["VP8X flags", (v: number) => write(bytes, 20, 1, v)],
  ] as const);
  const value =
    what === "VP8X size"
      ? pick(rng, [0, 9, 11, 18])
      : what === "VP8X flags"
        ? pick(rng, [0x02, 0x10, 0x20, 0xff])
        : pick(rng, [1, 2, 16_383, 16_384, 30_000, 30_001, 2 ** 24]);
  return { what: `${added}${what} ${value}`, bytes: mutate(value) };
};

/** The bitstream headers: a lossy frame that is not a key frame, a broken start code or signature, sizes of none and the largest. */
const bitstream: Mutation = (b, rng) => {
  const c = pickOr(
    rng,
    inner(b).filter((c) => (c.id === "VP8 " && c.size >= 10) || (c.id === "VP8L" && c.size >= 5)),
  );
  if (!c) return null;
  const data = c.start + 8;
  const [what, bytes] =
    c.id === "VP8 "
      ? pick(rng, [
          ["not a key frame", () => write(b, data, 1, b[data]! | 1)],
          ["a broken start code", () => write(b, data + 3, 1, 0x9c)],
          ["width 0", () => write(b, data + 6, 2, 0, true)],
          ["height 16383", () => write(b, data + 8, 2, 0x3fff, true)],
        ] as const)
      : pick(rng, [
          ["a broken signature", () => write(b, data, 1, 0x2e)],
          ["width and height 16384", () => write(b, data + 1, 4, (u32le(b, data + 1) | 0x0fffffff) >>> 0, true)],
          ["width and height 1", () => write(b, data + 1, 4, u32le(b, data + 1) & 0xf0000000, true)],
        ] as const);
  return { what: `${described(c)} with ${what}`, bytes: bytes() };
};

/** An animation frame: outside the canvas, of the largest size, inside another frame. */
const frame: Mutation = (b, rng) => {
  const c = pickOr(
    rng,
    inner(b).filter((c) => c.id === "ANMF" && c.size >= 16),
  );
  if (!c) return null;
  const data = c.start + 8;
  const canvasWidth = ascii(b, 12, 4) === "VP8X" ? 1 + u24le(b, 24) : 1;
  const [what, bytes] = pick(rng, [
    ["at the largest offset", () => write(b, data, 3, 0xffffff, true)],
    ["of the largest size", () => write(write(b, data + 6, 3, 0xffffff, true), data + 9, 3, 0xffffff, true)],
    // Its width field holds the width less one, its x field half the offset.
    ["one pixel wider than the canvas", () => write(b, data + 6, 3, canvasWidth - 2 * u24le(b, data), true)],
    [
      "inside another frame",
      () => {
        const grown = parentsResized(b, c, c.end - c.start);
        writeInto(grown, c.start + 4, 4, c.size + c.end - c.start, true);
        return splice(grown, c.start + 24, 0, b.subarray(c.start, c.end));
      },
    ],
  ] as const);
  return { what: `${described(c)} ${what}`, bytes: bytes() };
};

/** A chunk gone, its parents' sizes made to fit. */
const removed: Mutation = (b, rng) => {
  const c = pickKind(rng, inner(b), (c) => c.id);
  return (
    c && {
      what: `${described(c)} removed`,
      bytes: splice(parentsResized(b, c, -(c.end - c.start)), c.start, c.end - c.start),
    }
  );
};

/** A chunk twice (two image bitstreams, two VP8X), its parents' sizes made to fit. */
const duplicated: Mutation = (b, rng) => {
  const c = pickKind(rng, inner(b), (c) => c.id);
  return (
    c && {
      what: `${described(c)} twice`,
      bytes: splice(parentsResized(b, c, c.end - c.start), c.end, 0, b.subarray(c.start, c.end)),
    }
  );
};

/** A chunk's id: unknown, lower case, none, a container's, another image chunk's. */
const id: Mutation = (b, rng) => {
  const c = pickKind(rng, inner(b), (c) => c.id);
  if (!c) return null;
  const value = pick(
    rng,
    ["XXXX", "vp8 ", "\0\0\0\0", "LIST", "ANMF", "VP8X", "VP8L", "RIFF", "JUNK"].filter((v) => v !== c.id),
  );
  return { what: `${described(c)} as ${JSON.stringify(value)}`, bytes: splice(b, c.start, 4, latin1(value)) };
};

/** A chunk inside another (AVI's lists, WebP's frames) that says it is larger than its parent. */
const largerThanParent: Mutation = (b, rng) => {
  const c = pickKind(
    rng,
    inner(b).filter((c) => c.parents.length > 1),
    (c) => c.id,
  );
  if (!c) return null;
  const parent = c.parents.at(-1)!;
  const size = parent.end - c.start - 8 + pick(rng, [1, 2, 4096]);
  return {
    what: `${described(c)} with size ${size}, past the end of its ${parent.id} at ${parent.end}`,
    bytes: write(b, c.start + 4, 4, size, true),
  };
};

export const RIFF: Record<string, Mutation> = {
  riffSize,
  chunkSize,
  padding,
  canvas,
  bitstream,
  frame,
  removed,
  duplicated,
  id,
  largerThanParent,
};
