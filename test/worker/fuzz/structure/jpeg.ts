import { ascii, u16be, u32be, u32le } from "../../../../src/bytes";
import { jpegSegment, join, latin1, sof0, u16be as be16 } from "../../../support/build";
import { pick, pickKind, pickOr, splice, write, type Mutation, type Rng } from "./mutation";

/** A marker segment: from its 0xFF to the end of its payload; a scan also to the end of its entropy-coded data. */
interface Segment {
  marker: number;
  start: number;
  end: number;
  dataEnd?: number;
}

const NAMES: Record<number, string> = {
  0xc4: "DHT",
  0xcc: "DAC",
  0xd9: "EOI",
  0xda: "SOS",
  0xdb: "DQT",
  0xdc: "DNL",
  0xdd: "DRI",
  0xde: "DHP",
  0xfe: "COM",
};
const isFrame = (marker: number) =>
  marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
const nameOf = (marker: number) =>
  NAMES[marker] ??
  (isFrame(marker)
    ? `SOF${marker - 0xc0}`
    : marker >= 0xe0 && marker <= 0xef
      ? `APP${marker - 0xe0}`
      : `FF${marker.toString(16)}`);
const described = (s: Segment) => `${nameOf(s.marker)} at ${s.start}`;

/** Where entropy-coded data from `from` ends: the first marker that is not a stuffed 0xFF00 or a restart. */
function scanEnd(b: Uint8Array, from: number) {
  for (let i = b.indexOf(0xff, from); i !== -1 && i + 1 < b.length; i = b.indexOf(0xff, i + 1)) {
    const next = b[i + 1]!;
    if (next !== 0x00 && next !== 0xff && !(next >= 0xd0 && next <= 0xd7)) return i;
  }
  return b.length;
}

/** The segments of a JPEG, to its end-of-image marker or to where its structure breaks. */
export function jpegSegments(b: Uint8Array): Segment[] {
  const out: Segment[] = [];
  if (b[0] !== 0xff || b[1] !== 0xd8) return out;
  for (let at = 2; at + 2 <= b.length && b[at] === 0xff; ) {
    const marker = b[at + 1]!;
    if (marker === 0xff || marker === 0x01 || marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += marker === 0xff ? 1 : 2;
      continue;
    }
    if (marker === 0xd9) {
      out.push({ marker, start: at, end: at + 2 });
      break;
    }
    const end = at + 2 + u16be(b, at + 2);
    if (at + 4 > b.length || end > b.length || end < at + 4) break;
    const segment: Segment = { marker, start: at, end };
    if (marker === 0xda) segment.dataEnd = scanEnd(b, end);
    out.push(segment);
    at = segment.dataEnd ?? end;
  }
  return out;
}

const anySegment = (rng: Rng, list: Segment[]) => pickKind(rng, list, (s) => nameOf(s.marker));
const segmentsOf = (b: Uint8Array) => jpegSegments(b).filter((s) => s.marker !== 0xd9);
const framesOf = (b: Uint8Array) => segmentsOf(b).filter((s) => isFrame(s.marker) && s.end - s.start >= 11);

/** Length fields: zero, under the two bytes of the field itself, one short, one long, the largest, past the end. */
const length: Mutation = (b, rng) => {
  const s = anySegment(rng, segmentsOf(b));
  if (!s) return null;
  const actual = s.end - s.start - 2;
  const value = pick(rng, [0, 1, 2, actual - 1, actual + 1, 0xffff, Math.min(0xffff, b.length - s.start)]) & 0xffff;
  return { what: `${described(s)} with length ${value} instead of ${actual}`, bytes: write(b, s.start + 2, 2, value) };
};

/** A segment gone; a scan's header alone leaves its data where a marker should be. */
const removed: Mutation = (b, rng) => {
  const s = anySegment(rng, segmentsOf(b));
  if (!s) return null;
  const withData = s.dataEnd !== undefined && rng.int(2) === 0;
  return {
    what: `${described(s)} removed${withData ? " with its scan data" : ""}`,
    bytes: splice(b, s.start, (withData ? s.dataEnd! : s.end) - s.start),
  };
};

/** A segment twice in a row: two frame headers, two scans, tables defined again. */
const duplicated: Mutation = (b, rng) => {
  const s = anySegment(rng, segmentsOf(b));
  if (!s) return null;
  const end = s.dataEnd ?? s.end;
  return { what: `${described(s)} twice`, bytes: splice(b, end, 0, b.subarray(s.start, end)) };
};

/** Two neighbouring segments swapped: a scan before its frame header, tables after the scan that needs them. */
const swapped: Mutation = (b, rng) => {
  const list = segmentsOf(b);
  if (list.length < 2) return null;
  const i = rng.int(list.length - 1);
  const [x, y] = [list[i]!, list[i + 1]!];
  const yEnd = y.dataEnd ?? y.end;
  const bytes = join(b.subarray(0, x.start), b.subarray(y.start, yEnd), b.subarray(x.start, y.start), b.subarray(yEnd));
  return { what: `${described(x)} and ${described(y)} swapped`, bytes };
};

/** A frame header's size: none, one pixel, the side limit and past it, the largest a JPEG can say. */
const frameSize: Mutation = (b, rng) => {
  const s = pickOr(rng, framesOf(b));
  if (!s) return null;
  const [field, offset] = pick(rng, [
    ["height", 5],
    ["width", 7],
  ] as const);
  const value = pick(
    rng,
    [0, 1, 8192, 30_000, 30_001, 0xffff].filter((v) => v !== u16be(b, s.start + offset)),
  );
  return { what: `${described(s)} with ${field} ${value}`, bytes: write(b, s.start + offset, 2, value) };
};

/** A frame header's sample precision and component count, against what its length and the scans say. */
const frameFields: Mutation = (b, rng) => {
  const s = pickOr(rng, framesOf(b));
  if (!s) return null;
  const [field, offset, values] = pick(rng, [
    ["precision", 4, [0, 1, 12, 16, 255]],
    ["components", 9, [0, 2, 4, 255]],
  ] as const);
  const value = pick(
    rng,
    values.filter((v) => v !== b[s.start + offset]),
  );
  return { what: `${described(s)} with ${field} ${value}`, bytes: write(b, s.start + offset, 1, value) };
};

/** Markers that have no business in entropy-coded data: an image's end or start, tables, a frame, a scan, a restart out of turn. */
const STRAY_MARKERS: [string, number[]][] = [
  ["EOI", [0xff, 0xd9]],
  ["SOI", [0xff, 0xd8]],
  ["SOS", [0xff, 0xda, 0x00, 0x0c]],
  ["DHT", [0xff, 0xc4, 0x00, 0x02]],
  ["SOF0", [0xff, 0xc0, 0x00, 0x11]],
  ["DNL", [0xff, 0xdc, 0x00, 0x04, 0xff, 0xff]],
  ["RST5", [0xff, 0xd5]],
  ["APP1 of 64 KiB", [0xff, 0xe1, 0xff, 0xff]],
  ["TEM", [0xff, 0x01]],
];

const markerInScan: Mutation = (b, rng) => {
  const s = pickOr(
    rng,
    segmentsOf(b).filter((x) => x.dataEnd !== undefined && x.dataEnd > x.end),
  );
  if (!s) return null;
  const at = s.end + rng.int(s.dataEnd! - s.end);
  const [name, marker] = pick(rng, STRAY_MARKERS);
  const over = rng.int(2) === 0 && at + marker.length <= s.dataEnd!;
  return {
    what: `${name} ${over ? "written over" : "inserted in"} the scan data of ${described(s)} at ${at}`,
    bytes: splice(b, at, over ? marker.length : 0, marker),
  };
};

/** The end of the image: missing, right after the first scan's header, or a second image after it. */
const imageEnd: Mutation = (b, rng) => {
  const all = jpegSegments(b);
  const eoi = all.find((s) => s.marker === 0xd9);
  const scan = all.find((s) => s.marker === 0xda);
  const options: (() => { what: string; bytes: Uint8Array })[] = [];
  if (eoi) options.push(() => ({ what: `EOI at ${eoi.start} removed`, bytes: splice(b, eoi.start, 2) }));
  if (scan)
    options.push(() => ({
      what: `EOI right after the header of ${described(scan)}`,
      bytes: splice(b, scan.end, 0, [0xff, 0xd9]),
    }));
  if (eoi) options.push(() => ({ what: "the image again after its EOI", bytes: join(b.subarray(0, eoi.end), b) }));
  return options.length ? pick(rng, options)() : null;
};

/** A marker's 0xFF, or the marker code itself, turned into data. */
const notAMarker: Mutation = (b, rng) => {
  const s = anySegment(rng, jpegSegments(b));
  if (!s) return null;
  const [where, offset, value] = pick(rng, [
    ["0xFF as 0x00", 0, 0x00],
    ["0xFF as 0xFE", 0, 0xfe],
    ["code as 0x00", 1, 0x00],
  ] as const);
  return { what: `${described(s)} with its ${where}`, bytes: write(b, s.start + offset, 1, value) };
};

/** Fill bytes (0xFF) before a marker: any number is allowed, and none of them is part of the image. */
const fill: Mutation = (b, rng) => {
  const s = anySegment(rng, jpegSegments(b));
  if (!s) return null;
  const count = pick(rng, [1, 2, 255, 70_000]);
  return {
    what: `${count} fill bytes before ${described(s)}`,
    bytes: splice(b, s.start, 0, new Uint8Array(count).fill(0xff)),
    valid: true,
  };
};

/** Segments a file might carry at any boundary: a second SOI, DHP and SOF headers declaring other sizes, the largest APP and COM. */
const inserted: Mutation = (b, rng) => {
  const s = anySegment(rng, jpegSegments(b));
  if (!s) return null;
  const [name, segment] = pick(rng, [
    ["SOI", Uint8Array.from([0xff, 0xd8])],
    ["DHP of 65535x65535", jpegSegment(0xde, [8, 0xff, 0xff, 0xff, 0xff, 1, 1, 0x11, 0])],
    ["SOF0 of 30001x1", sof0(30_001, 1)],
    ["SOF0 of 1x1", sof0(1, 1)],
    [
      "APP2 ICC_PROFILE of 64 KiB",
      jpegSegment(0xe2, join(latin1("ICC_PROFILE\0"), [1, 1], new Uint8Array(0xffff - 2 - 14))),
    ],
    ["COM of 64 KiB", jpegSegment(0xfe, new Uint8Array(0xffff - 2).fill(0x41))],
    ["DRI of 0", jpegSegment(0xdd, be16(0))],
  ] as const);
  return { what: `${name} inserted before ${described(s)}`, bytes: splice(b, s.start, 0, segment) };
};

/** EXIF's own structure (a TIFF inside APP1): its first directory's offset and entry count, its byte order. */
const exifDirectory: Mutation = (b, rng) => {
  const s = pickOr(
    rng,
    segmentsOf(b).filter((x) => x.marker === 0xe1 && x.end - x.start >= 18 && ascii(b, x.start + 4, 6) === "Exif\0\0"),
  );
  if (!s) return null;
  const tiff = s.start + 10;
  const little = b[tiff] === 0x49;
  const size = s.end - tiff;
  const ifd = little ? u32le(b, tiff + 4) : u32be(b, tiff + 4);
  const options: [string, () => Uint8Array][] = [
    [`first directory at ${size}, past its end`, () => write(b, tiff + 4, 4, size, little)],
    ["first directory at 0xFFFFFFFF", () => write(b, tiff + 4, 4, -1, little)],
    ["first directory at 0, its own header", () => write(b, tiff + 4, 4, 0, little)],
    ["byte order swapped", () => write(b, tiff, 2, little ? 0x4d4d : 0x4949)],
  ];
  if (ifd + 2 <= size)
    options.push(["first directory with 65535 entries", () => write(b, tiff + ifd, 2, 0xffff, little)]);
  const [what, mutate] = pick(rng, options);
  return { what: `EXIF in ${described(s)}: ${what}`, bytes: mutate() };
};

export const JPEG: Record<string, Mutation> = {
  length,
  removed,
  duplicated,
  swapped,
  frameSize,
  frameFields,
  markerInScan,
  imageEnd,
  notAMarker,
  fill,
  inserted,
  exifDirectory,
};
