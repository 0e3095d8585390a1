import { ascii, u16le, u24le, u32le } from "../../bytes";
import { assertWithinSideLimit } from "../side-limit";
import { malformed, UnitStripper } from "./stripper";

const bad = (reason: string) => malformed("webp", reason);

const VP8X_EXIF = 0x08;
const VP8X_XMP = 0x04;

/** Bytes after a chunk's header that are read before it streams: the fields that declare a size. */
const SIZE_FIELDS: Record<string, number> = { VP8X: 10, "VP8 ": 10, VP8L: 5, ANMF: 16 };

/** What becomes of a chunk's data as it streams: passed on, left out, or replaced by zeros. */
type Body = "keep" | "drop" | "zero";

/**
 * Removes EXIF and XMP chunks from a WebP and clears their VP8X flags. The RIFF size at the
 * start changes, so the writer holds the first bytes back and patches them at the end. Every
 * chunk streams through once its header (and any size it declares) has been read: VP8X is
 * 10 bytes by the specification, and nothing else needs holding whole. The chunks inside an
 * animation frame (ANMF) are walked too, for their sizes; any there that are not image data
 * keep their place but lose their content, since the frame's size cannot change.
 */
export class WebpStripper extends UnitStripper {
  private state: "riff" | "chunk" | "body" = "riff";
  private position = 0;
  private riffEnd = 0;
  /** End of the animation frame whose chunks are being read; 0 outside one. */
  private frameEnd = 0;
  private left = 0;
  private body: Body = "keep";
  private canvas: { width: number; height: number } | null = null;
  private sawImage = false;

  protected step(b: Uint8Array): number {
    const used = this.unit(b);
    this.position += used;
    if (this.state === "chunk") {
      if (this.frameEnd && this.position === this.frameEnd) this.frameEnd = 0;
      if (this.position === this.riffEnd) {
        if (!this.sawImage) throw bad("no image data");
        this.finished = true;
      }
    }
    return used;
  }

  private unit(b: Uint8Array): number {
    if (this.state === "riff") {
      if (b.length < 12) return this.wait(12);
      const declared = u32le(b, 4);
      if (declared < 4) throw bad("broken RIFF size");
      this.riffEnd = 8 + declared;
      this.emit(b.subarray(0, 12));
      this.state = "chunk";
      return 12;
    }
    if (this.state === "body") {
      const n = Math.min(this.left, b.length);
      if (this.body === "keep") this.emit(b.subarray(0, n));
      else if (this.body === "zero") this.emit(new Uint8Array(n));
      this.left -= n;
      if (this.left === 0) this.state = "chunk";
      return n;
    }
    return this.chunk(b);
  }

  private chunk(b: Uint8Array): number {
    if (b.length < 8) return this.wait(8);
    const type = ascii(b, 0, 4);
    const size = u32le(b, 4);
    const room = (this.frameEnd || this.riffEnd) - this.position - 8;
    if (size > room) throw bad(`a ${type} chunk runs past the end of its ${this.frameEnd ? "frame" : "file"}`);
    // The padding byte of an odd-sized chunk may be missing at the very end.
    const padded = Math.min(size + (size & 1), room);
    const fields = SIZE_FIELDS[type];
    if (fields !== undefined) {
      if (size < fields) throw bad(`a ${type} chunk too short`);
      if (b.length < 8 + fields) return this.wait(8 + fields);
    }
    const nested = this.frameEnd !== 0;
    switch (type) {
      case "VP8X":
        return this.extendedHeader(b, size);
      case "ANMF":
        return this.frame(b, size);
      case "VP8 ":
        this.lossyHeader(b);
        return this.stream(b, padded, "keep");
      case "VP8L":
        this.losslessHeader(b);
        return this.stream(b, padded, "keep");
      case "EXIF":
      case "XMP ":
        return this.stream(b, padded, nested ? "zero" : "drop");
      default:
        return this.stream(b, padded, !nested || type === "ALPH" ? "keep" : "zero");
    }
  }

  /** The chunk's header now, its data as it arrives. */
  private stream(b: Uint8Array, padded: number, body: Body): number {
    if (body !== "drop") this.emit(b.subarray(0, 8));
    this.body = body;
    this.left = padded;
    this.state = padded > 0 ? "body" : "chunk";
    return 8;
  }

  private extendedHeader(b: Uint8Array, size: number): number {
    if (this.position !== 12) throw bad("VP8X is not the first chunk");
    if (size !== 10) throw bad(`a VP8X chunk of ${size} bytes`);
    this.canvas = { width: 1 + u24le(b, 12), height: 1 + u24le(b, 15) };
    assertWithinSideLimit(this.canvas.width, this.canvas.height);
    const chunk = b.slice(0, 18);
    chunk[8] = chunk[8]! & ~(VP8X_EXIF | VP8X_XMP);
    this.emit(chunk);
    return 18;
  }

  private lossyHeader(b: Uint8Array) {
    if (b[8]! & 1) throw bad("a lossy bitstream that does not start with a key frame");
    if (b[11] !== 0x9d || b[12] !== 0x01 || b[13] !== 0x2a) throw bad("broken lossy bitstream header");
    this.bitstream(u16le(b, 14) & 0x3fff, u16le(b, 16) & 0x3fff);
  }

  private losslessHeader(b: Uint8Array) {
    if (b[8] !== 0x2f) throw bad("broken lossless bitstream header");
    const bits = u32le(b, 9);
    this.bitstream(1 + (bits & 0x3fff), 1 + ((bits >>> 14) & 0x3fff));
  }

  /** A bitstream's own size counts too: a decoder may go by it rather than by the canvas. */
  private bitstream(width: number, height: number) {
    if (!width || !height) throw bad("a bitstream without a size");
    assertWithinSideLimit(width, height);
    this.sawImage = true;
  }

  private frame(b: Uint8Array, size: number): number {
    if (this.frameEnd) throw bad("an animation frame inside another");
    if (!this.canvas) throw bad("an animation frame without VP8X");
    if (size & 1) throw bad("an animation frame of odd size");
    const x = 2 * u24le(b, 8);
    const y = 2 * u24le(b, 11);
    const width = 1 + u24le(b, 14);
    const height = 1 + u24le(b, 17);
    assertWithinSideLimit(x + width, y + height);
    if (x + width > this.canvas.width || y + height > this.canvas.height) {
      throw bad(
        `an animation frame of ${width}x${height} at ${x},${y} ` +
          `outside the ${this.canvas.width}x${this.canvas.height} canvas`,
      );
    }
    this.emit(b.subarray(0, 24));
    this.frameEnd = this.position + 8 + size;
    return 24;
  }

  protected checkComplete() {
    if (!this.finished) throw bad("the file is truncated");
  }

  patchHead(head: Uint8Array, totalBytes: number) {
    const size = totalBytes - 8;
    head[4] = size & 0xff;
    head[5] = (size >>> 8) & 0xff;
    head[6] = (size >>> 16) & 0xff;
    head[7] = (size >>> 24) & 0xff;
  }
}
