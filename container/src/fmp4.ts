import { open, type FileHandle } from "node:fs/promises";
import { JobError } from "./run";

/**
 * A fragmented MP4 as ffmpeg writes it (ftyp, moov, then moof+mdat pairs, maybe an mfra),
 * read box by box from disk, never whole: where its init section ends, where each fragment lies
 * and when it starts, and its tracks' RFC 6381 codecs. Playlists address these byte ranges.
 */
export interface Fragment {
  offset: number;
  length: number;
  /** Presentation time of its first sample of the timed track, in seconds. */
  start: number;
  /** Its samples' total duration on that track, in seconds. */
  duration: number;
}

export interface Fmp4 {
  /** ftyp + moov: the init section, from byte 0. */
  initLength: number;
  /** "avc1.64001f", "mp4a.40.2", in track order. */
  codecs: string[];
  fragments: Fragment[];
  /** Where the last fragment ends: anything after (ffmpeg's mfra) no playlist addresses. */
  end: number;
}

interface Track {
  id: number;
  kind: string;
  timescale: number;
  codec: string | null;
}

interface Box {
  type: string;
  /** Where its content starts and its box ends, in the buffer or file it was read from. */
  start: number;
  end: number;
}

/** The boxes laid one after another in `buf` between `from` and `to`. */
function boxesIn(buf: Buffer, from: number, to: number): Box[] {
  const boxes: Box[] = [];
  let at = from;
  while (at + 8 <= to) {
    let size = buf.readUInt32BE(at);
    let header = 8;
    if (size === 1) {
      size = Number(buf.readBigUInt64BE(at + 8));
      header = 16;
    } else if (size === 0) size = to - at;
    if (size < header || at + size > to) throw broken("a box runs past its parent");
    boxes.push({ type: buf.toString("latin1", at + 4, at + 8), start: at + header, end: at + size });
    at += size;
  }
  return boxes;
}

const child = (buf: Buffer, box: Box, type: string) => boxesIn(buf, box.start, box.end).find((b) => b.type === type);
const children = (buf: Buffer, box: Box, type: string) =>
  boxesIn(buf, box.start, box.end).filter((b) => b.type === type);
const broken = (what: string) => new JobError(500, `the ladder's fragmented MP4 is broken: ${what}`);

/** Reads the top-level boxes of `file`, keeping the moov and each moof's content. */
export async function readFmp4(file: string, timedKind: "vide" | "soun"): Promise<Fmp4> {
  const handle = await open(file, "r");
  try {
    const { size } = await handle.stat();
    let at = 0;
    let initLength = 0;
    let tracks: Track[] = [];
    const fragments: Fragment[] = [];
    let pending: { offset: number; start: number; duration: number } | null = null;
    let end = 0;
    while (at + 8 <= size) {
      const { type, length, header } = await boxHeader(handle, at, size);
      if (type === "moov") {
        tracks = readTracks(await readAt(handle, at, length));
        initLength = at + length;
      } else if (type === "moof") {
        const timed = tracks.find((t) => t.kind === timedKind);
        if (!timed) throw broken(`no ${timedKind} track`);
        pending = { offset: at, ...fragmentTime(await readAt(handle, at, length), header, timed) };
      } else if (type === "mdat" && pending) {
        fragments.push({ ...pending, length: at + length - pending.offset });
        end = at + length;
        pending = null;
      }
      at += length;
    }
    if (!initLength || fragments.length === 0) throw broken("no init section or no fragment");
    return { initLength, codecs: tracks.map((t) => t.codec).filter((c) => c !== null), fragments, end };
  } finally {
    await handle.close();
  }
}

async function readAt(handle: FileHandle, at: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  await handle.read(buf, 0, length, at);
  return buf;
}

async function boxHeader(handle: FileHandle, at: number, size: number) {
  const buf = await readAt(handle, at, Math.min(16, size - at));
  let length = buf.readUInt32BE(0);
  let header = 8;
  if (length === 1) {
    length = Number(buf.readBigUInt64BE(8));
    header = 16;
  } else if (length === 0) length = size - at;
  if (length < header || at + length > size) throw broken("a top-level box runs past the file");
  return { type: buf.toString("latin1", 4, 8), length, header };
}

function readTracks(moov: Buffer): Track[] {
  const [root] = boxesIn(moov, 0, moov.length);
  if (!root) throw broken("an empty moov");
  return children(moov, root, "trak").map((trak) => {
    const tkhd = child(moov, trak, "tkhd");
    const mdia = child(moov, trak, "mdia");
    const mdhd = mdia && child(moov, mdia, "mdhd");
    const hdlr = mdia && child(moov, mdia, "hdlr");
    if (!tkhd || !mdhd || !hdlr) throw broken("a track without its headers");
    const v1 = (box: Box) => moov[box.start] === 1;
    const stbl = ["minf", "stbl"].reduce<Box | undefined>((b, t) => b && child(moov, b, t), mdia);
    const stsd = stbl && child(moov, stbl, "stsd");
    return {
      id: moov.readUInt32BE(tkhd.start + (v1(tkhd) ? 20 : 12)),
      kind: moov.toString("latin1", hdlr.start + 8, hdlr.start + 12),
      timescale: moov.readUInt32BE(mdhd.start + (v1(mdhd) ? 20 : 12)),
      codec: stsd ? codecOf(moov, stsd) : null,
    };
  });
}

/** RFC 6381: avc1.PPCCLL from the avcC box, mp4a.40.N from the esds's audio object type. */
function codecOf(buf: Buffer, stsd: Box): string | null {
  const [entry] = boxesIn(buf, stsd.start + 8, stsd.end);
  if (entry?.type === "avc1" || entry?.type === "avc3") {
    const avcC = boxesIn(buf, entry.start + 78, entry.end).find((b) => b.type === "avcC");
    if (!avcC) return null;
    return `${entry.type}.${buf.subarray(avcC.start + 1, avcC.start + 4).toString("hex")}`;
  }
  if (entry?.type === "mp4a") {
    const esds = boxesIn(buf, entry.start + 28, entry.end).find((b) => b.type === "esds");
    return `mp4a.40.${esds ? audioObjectType(buf, esds.start + 4, esds.end) : 2}`;
  }
  return null;
}

/** The AudioSpecificConfig's first five bits, inside the ES descriptor's decoder config (ISO 14496-1). */
function audioObjectType(buf: Buffer, from: number, to: number): number {
  let at = from;
  while (at < to) {
    const tag = buf[at++];
    let length = 0;
    for (let i = 0; i < 4; i++) {
      const byte = buf[at++] ?? 0;
      length = (length << 7) | (byte & 0x7f);
      if (!(byte & 0x80)) break;
    }
    if (tag === 0x03) {
      const flags = buf[at + 2] ?? 0;
      at += 3 + (flags & 0x80 ? 2 : 0) + (flags & 0x40 ? 1 + (buf[at + 3] ?? 0) : 0) + (flags & 0x20 ? 2 : 0);
    } else if (tag === 0x04) at += 13;
    else if (tag === 0x05) return (buf[at] ?? 0) >> 3 || 2;
    else at += length;
  }
  return 2;
}

/** When a moof's fragment starts on the timed track, and how long its samples last there. */
function fragmentTime(moof: Buffer, header: number, track: Track): { start: number; duration: number } {
  const root: Box = { type: "moof", start: header, end: moof.length };
  for (const traf of children(moof, root, "traf")) {
    const tfhd = child(moof, traf, "tfhd");
    const tfdt = child(moof, traf, "tfdt");
    if (!tfhd || !tfdt || moof.readUInt32BE(tfhd.start + 4) !== track.id) continue;
    const decode =
      moof[tfdt.start] === 1 ? Number(moof.readBigUInt64BE(tfdt.start + 4)) : moof.readUInt32BE(tfdt.start + 4);
    const tfhdFlags = moof.readUInt32BE(tfhd.start) & 0xffffff;
    const defaultDuration =
      tfhdFlags & 0x08
        ? moof.readUInt32BE(tfhd.start + 8 + (tfhdFlags & 0x01 ? 8 : 0) + (tfhdFlags & 0x02 ? 4 : 0))
        : 0;
    let duration = 0;
    let offset: number | null = null;
    for (const trun of children(moof, traf, "trun")) {
      const samples = runSamples(moof, trun, defaultDuration);
      duration += samples.duration;
      offset ??= samples.firstOffset;
    }
    return { start: (decode + (offset ?? 0)) / track.timescale, duration: duration / track.timescale };
  }
  throw broken(`a fragment without track ${track.id}`);
}

/** A trun's samples' total duration, and its first sample's composition offset. */
function runSamples(buf: Buffer, trun: Box, defaultDuration: number) {
  const version = buf[trun.start];
  const flags = buf.readUInt32BE(trun.start) & 0xffffff;
  const count = buf.readUInt32BE(trun.start + 4);
  let at = trun.start + 8 + (flags & 0x01 ? 4 : 0) + (flags & 0x04 ? 4 : 0);
  const fields = [0x100, 0x200, 0x400, 0x800].filter((f) => flags & f).length;
  let duration = 0;
  let firstOffset = 0;
  for (let i = 0; i < count; i++) {
    duration += flags & 0x100 ? buf.readUInt32BE(at) : defaultDuration;
    if (i === 0 && flags & 0x800) {
      const cto = at + 4 * (fields - 1);
      firstOffset = version === 1 ? buf.readInt32BE(cto) : buf.readUInt32BE(cto);
    }
    at += 4 * fields;
  }
  return { duration, firstOffset };
}
