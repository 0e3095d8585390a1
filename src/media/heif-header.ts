import { ascii, u16be, u32be, u64be } from "../bytes";
import { info, invalid, more, withLargest, type HeaderResult } from "./image-info";

/**
 * HEIF family (HEIC, HEIF, AVIF): the primary item's `ispe` property gives its size and `irot`
 * its rotation (anticlockwise quarter turns); both hang off meta/iprp, linked by `ipma`.
 */
export function heif(b: Uint8Array): HeaderResult {
  const boxes = (start: number, end: number) => {
    const out: { type: string; at: number; body: number; end: number }[] = [];
    for (let at = start; at + 8 <= end; ) {
      let size = u32be(b, at);
      const type = ascii(b, at + 4, 4);
      let body = at + 8;
      if (size === 1) {
        if (at + 16 > b.length) break;
        size = u64be(b, at + 8);
        body = at + 16;
      } else if (size === 0) size = end - at;
      if (size < 8) break;
      out.push({ type, at, body, end: Math.min(at + size, end) });
      at += size;
    }
    return out;
  };
  const meta = boxes(0, b.length).find((x) => x.type === "meta");
  if (!meta) return b.length > 1024 * 1024 ? invalid("HEIF without metadata") : more;
  if (meta.end > b.length) return more;
  const inMeta = boxes(meta.body + 4, meta.end); // meta is a full box: 4 bytes version/flags
  const pitm = inMeta.find((x) => x.type === "pitm");
  const primary = pitm ? (b[pitm.body]! === 0 ? u16be(b, pitm.body + 4) : u32be(b, pitm.body + 4)) : 1;
  const iprp = inMeta.find((x) => x.type === "iprp");
  if (!iprp) return invalid("HEIF without item properties");
  const inIprp = boxes(iprp.body, iprp.end);
  const ipco = inIprp.find((x) => x.type === "ipco");
  const ipma = inIprp.find((x) => x.type === "ipma");
  if (!ipco || !ipma) return invalid("HEIF without item properties");
  const properties = boxes(ipco.body, ipco.end);

  const version = b[ipma.body]!;
  const flags = u32be(b, ipma.body) & 0xffffff;
  let at = ipma.body + 4;
  const entries = u32be(b, at);
  at += 4;
  let associated: number[] = [];
  for (let i = 0; i < entries && at < ipma.end; i++) {
    const item = version < 1 ? u16be(b, at) : u32be(b, at);
    at += version < 1 ? 2 : 4;
    const count = b[at++]!;
    const indexes: number[] = [];
    for (let k = 0; k < count; k++) {
      const value = flags & 1 ? u16be(b, at) & 0x7fff : b[at]! & 0x7f;
      at += flags & 1 ? 2 : 1;
      indexes.push(value);
    }
    if (item === primary) associated = indexes;
  }
  let width = 0;
  let height = 0;
  let quarterTurns = 0;
  for (const index of associated) {
    const p = properties[index - 1];
    if (!p) continue;
    if (p.type === "ispe") {
      width = u32be(b, p.body + 4);
      height = u32be(b, p.body + 8);
    } else if (p.type === "irot") {
      quarterTurns = b[p.body]! & 3;
    }
  }
  if (!width || !height) return invalid("HEIF without an image size");
  // Express the rotation as the EXIF orientation it is equivalent to.
  const orientation = [1, 8, 3, 6][quarterTurns]!;
  // Every item's size counts, not only the primary's (thumbnails, grid tiles, hidden images).
  const items = properties
    .filter((p) => p.type === "ispe")
    .map((p) => ({ width: u32be(b, p.body + 4), height: u32be(b, p.body + 8) }));
  return withLargest(info(width, height, orientation), items);
}
