import { ascii, u32be, u32le } from "../bytes";
import type { MediaType } from "../model/schema";

/** What a file is, decided from its first bytes only (never its name or Content-Type). */
export interface Sniffed {
  type: MediaType;
  format: Format;
  mime: string;
  ext: string;
}

export type Format =
  | "jpeg"
  | "png"
  | "gif"
  | "webp"
  | "avif"
  | "bmp"
  | "tiff"
  | "heic"
  | "heif"
  | "mp4"
  | "webm"
  | "avi"
  | "mov"
  | "m4v"
  | "mkv"
  | "mpeg"
  | "wmv"
  | "flv"
  | "3gp";

/** Bytes a caller should gather (or the whole file, if shorter) before sniffing. */
export const SNIFF_BYTES = 4096;

const FORMATS: Record<Format, Omit<Sniffed, "format">> = {
  jpeg: { type: "image", mime: "image/jpeg", ext: "jpg" },
  png: { type: "image", mime: "image/png", ext: "png" },
  gif: { type: "image", mime: "image/gif", ext: "gif" },
  webp: { type: "image", mime: "image/webp", ext: "webp" },
  avif: { type: "image", mime: "image/avif", ext: "avif" },
  bmp: { type: "image", mime: "image/bmp", ext: "bmp" },
  tiff: { type: "image", mime: "image/tiff", ext: "tif" },
  heic: { type: "image", mime: "image/heic", ext: "heic" },
  heif: { type: "image", mime: "image/heif", ext: "heif" },
  mp4: { type: "video", mime: "video/mp4", ext: "mp4" },
  webm: { type: "video", mime: "video/webm", ext: "webm" },
  avi: { type: "video", mime: "video/x-msvideo", ext: "avi" },
  mov: { type: "video", mime: "video/quicktime", ext: "mov" },
  m4v: { type: "video", mime: "video/x-m4v", ext: "m4v" },
  mkv: { type: "video", mime: "video/x-matroska", ext: "mkv" },
  mpeg: { type: "video", mime: "video/mpeg", ext: "mpg" },
  wmv: { type: "video", mime: "video/x-ms-wmv", ext: "wmv" },
  flv: { type: "video", mime: "video/x-flv", ext: "flv" },
  "3gp": { type: "video", mime: "video/3gpp", ext: "3gp" },
};

export const ACCEPTED_FORMATS_TEXT =
  "JPG, PNG, GIF, WEBP, AVIF, BMP, TIFF, HEIC, HEIF, MP4, WEBM, AVI, MOV, M4V, MKV, MPEG, WMV, FLV, 3GP";

const startsWith = (b: Uint8Array, sig: number[], offset = 0) =>
  b.length >= offset + sig.length && sig.every((v, i) => b[offset + i] === v);

const HEIC_BRANDS = new Set(["heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs"]);
const HEIF_BRANDS = new Set(["mif1", "msf1", "mif2"]);
const AVIF_BRANDS = new Set(["avif", "avis"]);
const MOV_BRANDS = new Set(["qt  "]);
const M4V_BRANDS = new Set(["M4V ", "M4VH", "M4VP"]);
const THREE_GP_BRANDS = new Set([
  "3gp4",
  "3gp5",
  "3gp6",
  "3gp7",
  "3gs7",
  "3ge6",
  "3ge7",
  "3gg6",
  "3g2a",
  "3g2b",
  "3g2c",
]);
const MP4_BRANDS = new Set([
  "isom",
  "iso2",
  "iso3",
  "iso4",
  "iso5",
  "iso6",
  "iso7",
  "iso8",
  "iso9",
  "mp41",
  "mp42",
  "mp71",
  "avc1",
  "dash",
  "msnv",
  "ndas",
  "mmp4",
  "XAVC",
  "f4v ",
]);

function sniffFtyp(b: Uint8Array): Format | null {
  if (b.length < 16 || ascii(b, 4, 4) !== "ftyp") return null;
  const boxSize = u32be(b, 0);
  if (boxSize < 16 || boxSize % 4 !== 0) return null;
  const major = ascii(b, 8, 4);
  // Brands are read from the first bytes only, however large the box says it is.
  const compatible = Math.floor((Math.min(boxSize, b.length, SNIFF_BYTES) - 16) / 4);
  const brands = [major, ...Array.from({ length: compatible }, (_, k) => ascii(b, 16 + 4 * k, 4))];
  // The major brand says what the file is; compatible brands only break ties.
  if (AVIF_BRANDS.has(major)) return "avif";
  if (HEIC_BRANDS.has(major)) return "heic";
  if (HEIF_BRANDS.has(major)) {
    if (brands.some((x) => AVIF_BRANDS.has(x))) return "avif";
    if (brands.some((x) => HEIC_BRANDS.has(x))) return "heic";
    return "heif";
  }
  if (MP4_BRANDS.has(major)) return "mp4";
  if (MOV_BRANDS.has(major)) return "mov";
  if (M4V_BRANDS.has(major)) return "m4v";
  if (THREE_GP_BRANDS.has(major)) return "3gp";
  return null;
}

/** QuickTime files from before `ftyp` start straight with a movie atom. */
function sniffOldQuickTime(b: Uint8Array): boolean {
  return b.length >= 8 && ["moov", "mdat", "wide", "free", "skip", "pnot"].includes(ascii(b, 4, 4)) && b[0] === 0;
}

/** MPEG program stream (pack header) or transport stream (0x47 sync byte every 188 bytes). */
function sniffMpeg(b: Uint8Array): boolean {
  if (startsWith(b, [0x00, 0x00, 0x01, 0xba]) || startsWith(b, [0x00, 0x00, 0x01, 0xb3])) return true;
  return b.length >= 188 * 3 && b[0] === 0x47 && b[188] === 0x47 && b[376] === 0x47;
}

/** EBML header whose DocType element (id 0x4282) says "webm" or "matroska". */
function sniffMatroska(b: Uint8Array): "webm" | "mkv" | null {
  if (!startsWith(b, [0x1a, 0x45, 0xdf, 0xa3])) return null;
  const end = Math.min(b.length, 128);
  for (let i = 4; i + 2 < end; i++) {
    if (b[i] !== 0x42 || b[i + 1] !== 0x82) continue;
    // The element size is an EBML variable-length integer: its leading zero bits give its length.
    const first = b[i + 2]!;
    const length = Math.clz32(first) - 23;
    if (length < 1 || length > 8) return null;
    let size = first & (0xff >> length);
    for (let k = 1; k < length; k++) size = size * 256 + (b[i + 2 + k] ?? 0);
    const docType = ascii(b, i + 2 + length, Math.min(size, 16));
    return docType === "webm" ? "webm" : docType === "matroska" ? "mkv" : null;
  }
  return null;
}

function sniffBmp(b: Uint8Array): boolean {
  if (b.length < 26 || !startsWith(b, [0x42, 0x4d])) return false;
  const dibSize = u32le(b, 14);
  return [12, 16, 40, 52, 56, 64, 108, 124].includes(dibSize);
}

/** The format a stored file was sniffed as, from the MIME type recorded with it (one per format). */
export function formatOfMime(mime: string): Format | null {
  const found = Object.entries(FORMATS).find(([, known]) => known.mime === mime);
  return found ? (found[0] as Format) : null;
}

/** The MIME type of a stored file's extension (as `path` names it), or null for one no format has. */
export function mimeOfExtension(ext: string): string | null {
  return Object.values(FORMATS).find((known) => known.ext === ext.toLowerCase())?.mime ?? null;
}

export function sniff(bytes: Uint8Array): Sniffed | null {
  const format = detect(bytes);
  return format ? { format, ...FORMATS[format] } : null;
}

function detect(b: Uint8Array): Format | null {
  if (startsWith(b, [0xff, 0xd8, 0xff])) return "jpeg";
  if (startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "png";
  if (b.length >= 6 && (ascii(b, 0, 6) === "GIF87a" || ascii(b, 0, 6) === "GIF89a")) return "gif";
  if (b.length >= 12 && ascii(b, 0, 4) === "RIFF") {
    const kind = ascii(b, 8, 4);
    if (kind === "WEBP") return "webp";
    if (kind === "AVI ") return "avi";
    return null;
  }
  if (startsWith(b, [0x49, 0x49, 0x2a, 0x00]) || startsWith(b, [0x4d, 0x4d, 0x00, 0x2a])) return "tiff";
  if (startsWith(b, [0x49, 0x49, 0x2b, 0x00]) || startsWith(b, [0x4d, 0x4d, 0x00, 0x2b])) return "tiff";
  if (sniffBmp(b)) return "bmp";
  const matroska = sniffMatroska(b);
  if (matroska) return matroska;
  if (startsWith(b, [0x30, 0x26, 0xb2, 0x75, 0x8e, 0x66, 0xcf, 0x11])) return "wmv";
  if (b.length >= 9 && ascii(b, 0, 3) === "FLV" && b[3] === 1) return "flv";
  if (sniffMpeg(b)) return "mpeg";
  return sniffFtyp(b) ?? (sniffOldQuickTime(b) ? "mov" : null);
}
