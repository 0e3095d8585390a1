import { ascii, u16be } from "../../bytes";
import { tiffOrientation } from "../image-header";
import { assertWithinSideLimit } from "../side-limit";
import { malformed, UnitStripper } from "./stripper";

const bad = (reason: string) => malformed("jpg", reason);

/**
 * An APP1 segment holding only an EXIF orientation, so that an image kept byte-for-byte
 * (keep_original) still displays upright once the rest of its EXIF is gone.
 */
function orientationExif(orientation: number): Uint8Array {
  const tiff = [
    0x4d,
    0x4d,
    0x00,
    0x2a,
    0,
    0,
    0,
    8,
    0,
    1,
    0x01,
    0x12,
    0,
    3,
    0,
    0,
    0,
    1,
    0,
    orientation,
    0,
    0,
    0,
    0,
    0,
    0,
  ];
  const payload = [0x45, 0x78, 0x69, 0x66, 0, 0, ...tiff];
  const length = payload.length + 2;
  return new Uint8Array([0xff, 0xe1, length >> 8, length & 0xff, ...payload]);
}

/** Enough of a segment to know what it is: marker, length and a 12-byte identifier (or a frame header). */
const HEAD_BYTES = 16;

/**
 * Keeps what decoding needs: JFIF (APP0), ICC profiles (APP2 ICC_PROFILE), Adobe colour
 * transform (APP14) and every non-APP segment. EXIF becomes orientation-only; XMP, IPTC,
 * comments, maker segments and anything after the end-of-image marker go.
 */
function keepSegment(marker: number, head: Uint8Array): boolean {
  if (marker === 0xfe) return false; // comment
  if (marker < 0xe0 || marker > 0xef) return true;
  const id = ascii(head, 4, 12);
  if (marker === 0xe0) return id.startsWith("JFIF\0");
  if (marker === 0xe2) return id.startsWith("ICC_PROFILE\0");
  return marker === 0xee && id.startsWith("Adobe");
}

const isFrameHeader = (marker: number) =>
  marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
/** DHP (hierarchical progression) declares the size of the whole image the same way. */
const DHP = 0xde;

/**
 * Segments stream through (or past, when dropped) once their first bytes said what they are;
 * only an EXIF segment, at most 64 KiB, is read whole for its orientation.
 */
export class JpegStripper extends UnitStripper {
  private state: "start" | "markers" | "segment" | "scan" = "start";
  private left = 0;
  private keep = false;
  private afterSegment: "markers" | "scan" = "markers";
  private sawFrame = false;
  private exifWritten = false;

  protected step(b: Uint8Array): number {
    switch (this.state) {
      case "start":
        if (b.length < 2) return this.wait(2);
        if (b[0] !== 0xff || b[1] !== 0xd8) throw bad("missing start of image");
        this.emit(b.subarray(0, 2));
        this.state = "markers";
        return 2;
      case "markers":
        return this.marker(b);
      case "segment":
        return this.segment(b);
      case "scan":
        return this.scan(b);
    }
  }

  private marker(b: Uint8Array): number {
    if (b.length < 2) return this.wait(2);
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
    if (marker === 0xd8) throw bad("a second start of image");
    if (b.length < 4) return this.wait(4);
    const length = u16be(b, 2);
    if (length < 2) throw bad("broken segment length");
    const size = 2 + length;
    const head = Math.min(size, HEAD_BYTES);
    if (b.length < head) return this.wait(head);
    if (isFrameHeader(marker) || marker === DHP) this.checkSize(b.subarray(0, head));
    if (isFrameHeader(marker)) this.sawFrame = true;
    if (marker === 0xe1 && size >= 10 && ascii(b, 4, 6) === "Exif\0\0") return this.exif(b, size);
    if (marker === 0xda && !this.sawFrame) throw bad("scan before frame header");
    this.keep = keepSegment(marker, b.subarray(0, head));
    this.left = size;
    this.afterSegment = marker === 0xda ? "scan" : "markers";
    this.state = "segment";
    return this.segment(b);
  }

  /** Every frame is checked, not only the first: a decoder may take any of them. */
  private checkSize(head: Uint8Array) {
    if (head.length < 10) throw bad("a frame header too short for its size");
    const height = u16be(head, 5);
    const width = u16be(head, 7);
    // A height of 0 defers it to a DNL marker after the first scan: too late to check, and rare.
    if (!width || !height) throw bad("a frame without its size");
    assertWithinSideLimit(width, height);
  }

  private exif(b: Uint8Array, size: number): number {
    if (b.length < size) return this.wait(size);
    const orientation = tiffOrientation(b.subarray(10, size));
    if (orientation > 1 && orientation <= 8 && !this.exifWritten) this.emit(orientationExif(orientation));
    this.exifWritten = true;
    return size;
  }

  private segment(b: Uint8Array): number {
    const data = b.subarray(0, Math.min(this.left, b.length));
    if (this.keep) this.emit(data);
    this.left -= data.length;
    if (this.left === 0) this.state = this.afterSegment;
    return data.length;
  }

  /**
   * Entropy-coded data runs until a marker other than a stuffed 0xFF00 or a restart marker; 0xFF
   * fill bytes may come before that marker. One pass over the bytes, whatever the piece sizes.
   */
  private scan(b: Uint8Array): number {
    let i = b.indexOf(0xff);
    while (i !== -1 && i + 1 < b.length) {
      const next = b[i + 1]!;
      if (next === 0xff) {
        i++;
        continue;
      }
      if (next !== 0x00 && !(next >= 0xd0 && next <= 0xd7)) {
        this.state = "markers";
        if (i === 0) return this.marker(b);
        this.emit(b.subarray(0, i));
        return i;
      }
      i = b.indexOf(0xff, i + 2);
    }
    // Hold back a trailing 0xFF: it may start a marker.
    const upTo = i === -1 ? b.length : i;
    if (upTo === 0) return this.wait(2);
    this.emit(b.subarray(0, upTo));
    return upTo;
  }

  protected checkComplete() {
    if (!this.finished) throw bad("the file is truncated");
  }
}
