/** An ISO BMFF box as found in a file: where it starts and ends, and its path from the top (`moov/udta`). */
export interface FoundBox {
  path: string;
  type: string;
  start: number;
  end: number;
}

/** Boxes the walk goes into (those the metadata remover walks, and the metadata boxes themselves). */
const CONTAINERS = new Set(["moov", "trak", "mdia", "minf", "udta", "edts", "dinf", "stbl"]);

/**
 * Every box of an MP4/MOV down through the containers above, checking that each lies within its
 * parent and that the top-level boxes cover the file exactly.
 */
export function walkBoxes(bytes: Uint8Array): FoundBox[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const found: FoundBox[] = [];
  const walk = (start: number, end: number, parent: string) => {
    let at = start;
    while (at < end) {
      if (end - at < 8) throw new Error(`${end - at} stray bytes at ${at} in ${parent || "the file"}`);
      let size = view.getUint32(at);
      const type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
      let header = 8;
      if (size === 1) {
        size = Number(view.getBigUint64(at + 8));
        header = 16;
      } else if (size === 0) size = end - at;
      if (size < header || at + size > end)
        throw new Error(`box ${type} at ${at} of ${size} bytes does not fit in ${parent || "the file"}`);
      const path = parent ? `${parent}/${type}` : type;
      found.push({ path, type, start: at, end: at + size });
      if (CONTAINERS.has(type)) walk(at + header, at + size, path);
      at += size;
    }
  };
  walk(0, bytes.length, "");
  return found;
}

export function contains(haystack: Uint8Array, needle: Uint8Array | string) {
  const n = typeof needle === "string" ? Uint8Array.from(needle, (c) => c.charCodeAt(0)) : needle;
  outer: for (let i = haystack.indexOf(n[0]!); i !== -1; i = haystack.indexOf(n[0]!, i + 1)) {
    for (let j = 1; j < n.length; j++) if (haystack[i + j] !== n[j]) continue outer;
    return true;
  }
  return false;
}
