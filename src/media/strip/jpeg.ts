import { tiffOrientation } from "../image-info";
import { malformed, UnitStripper } from "./stripper";

const bad = (reason: string) => malformed("jpg", reason);

/**
 * An APP1 segment holding only an EXIF orientation, so that an image kept byte-for-byte
 * (keep_original) still displays upright once the rest of its EXIF is gone.
 */
export function orientationExif(orientation: number): Uint8Array {
  const tiff = [0x4d, 0x4d, 0x00, 0x2a, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, orientation, 0, 0, 0, 0, 0, 0];
  const payload = [0x45, 0x78, 0x69, 0x66, 0, 0, ...tiff];
  const length = payload.length + 2;
  return new Uint8Array([0xff, 0xe1, length >> 8, length & 0xff, ...payload]);
}

/**
 * Keeps what decoding needs: JFIF (APP0), ICC profiles (APP2 ICC_PROFILE), Adobe colour
 * transform (APP14) and every non-APP segment. EXIF becomes orientation-only; XMP, IPTC,
 * comments, maker segments and anything after the end-of-image marker go.
 */
function keepSegment(marker: number, segment: Uint8Array): boolean {
  if (marker === 0xfe) return false; // comment
  if (marker < 0xe0 || marker > 0xef) return true;
  const id = String.fromCharCode(...segment.subarray(4, 16));
  if (marker === 0xe0) return id.startsWith("JFIF\0");
  if (marker === 0xe2) return id.startsWith("ICC_PROFILE\0");
  return marker === 0xee && id.startsWith("Adobe");
}

export class JpegStripper extends UnitStripper {
  private state: "start" | "markers" | "scan" = "start";
  private sawFrame = false;
  private exifWritten = false;

  protected step(b: Uint8Array): number {
    if (this.state === "start") {
      if (b.length < 2) return 0;
      if (b[0] !== 0xff || b[1] !== 0xd8) throw bad("missing start of image");
      this.emit(b.subarray(0, 2));
      this.state = "markers";
      return 2;
    }
    if (this.state === "scan") return this.scan(b);

    if (b.length < 2) return 0;
    if (b[0] !== 0xff) throw bad("broken marker structure");
    const marker = b[1]!;
    if (marker === 0xff) return 1; // fill byte
    if (marker === 0xd9) {
      if (!this.sawFrame) throw bad("no image data");
      this.emit(b.subarray(0, 2));
      this.finished = true;
      return 2;
    }
    if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      this.emit(b.subarray(0, 2));
      return 2;
    }
    if (b.length < 4) return 0;
    const length = (b[2]! << 8) | b[3]!;
    if (length < 2) throw bad("broken segment length");
    if (b.length < 2 + length) return 0;
    const segment = b.subarray(0, 2 + length);
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) this.sawFrame = true;
    if (marker === 0xe1 && String.fromCharCode(...segment.subarray(4, 10)) === "Exif\0\0") {
      const orientation = tiffOrientation(segment.subarray(10));
      if (orientation > 1 && orientation <= 8 && !this.exifWritten) this.emit(orientationExif(orientation));
      this.exifWritten = true;
    } else if (keepSegment(marker, segment)) {
      this.emit(segment);
    }
    if (marker === 0xda) {
      if (!this.sawFrame) throw bad("scan before frame header");
      this.state = "scan";
    }
    return 2 + length;
  }

  /** Entropy-coded data runs until a marker other than a stuffed 0xFF00 or a restart marker. */
  private scan(b: Uint8Array): number {
    let i = b.indexOf(0xff);
    while (i !== -1) {
      if (i + 1 >= b.length) break;
      const next = b[i + 1]!;
      if (next !== 0x00 && !(next >= 0xd0 && next <= 0xd7) && next !== 0xff) {
        this.emit(b.subarray(0, i));
        this.state = "markers";
        return i;
      }
      i = b.indexOf(0xff, i + 2);
    }
    // Hold back a trailing 0xFF: it may start a marker.
    const upTo = i === -1 ? b.length : i;
    this.emit(b.subarray(0, upTo));
    return upTo;
  }

  protected checkComplete() {
    if (!this.finished) throw bad("the file is truncated");
  }
}
