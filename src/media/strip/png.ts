import { ascii, u32be } from "../../bytes";
import { assertWithinSideLimit } from "../side-limit";
import { crc32 } from "./crc32";
import { malformed, UnitStripper } from "./stripper";

/** Chunks that describe pixels, colour or animation; everything else ancillary is dropped. */
const KEEP = new Set([
  "IHDR",
  "PLTE",
  "IDAT",
  "IEND",
  "tRNS",
  "cHRM",
  "gAMA",
  "iCCP",
  "sBIT",
  "sRGB",
  "cICP",
  "mDCV",
  "cLLI",
  "bKGD",
  "hIST",
  "pHYs",
  "sPLT",
  "acTL",
  "fcTL",
  "fdAT",
]);

/** Chunks that declare a size, read whole to check it (their lengths are fixed and small). */
const SIZED: Record<string, number> = { IHDR: 13, fcTL: 26 };

const VALID_DEPTHS: Record<number, number[]> = {
  0: [1, 2, 4, 8, 16],
  2: [8, 16],
  3: [1, 2, 4, 8],
  4: [8, 16],
  6: [8, 16],
};

const bad = (reason: string) => malformed("png", reason);

/**
 * Removes text, EXIF and time chunks, checking every chunk's CRC and the file's structure. Chunk
 * data streams through (or past, when dropped) as it arrives, its CRC computed on the way.
 */
export class PngStripper extends UnitStripper {
  private state: "signature" | "chunk" | "sized" | "data" | "crc" = "signature";
  private type = "";
  private left = 0;
  private keep = false;
  private crc = 0;
  private chunks = 0;
  private sawIdat = false;
  private width = 0;
  private height = 0;

  protected step(b: Uint8Array): number {
    switch (this.state) {
      case "signature":
        if (b.length < 8) return this.wait(8);
        this.emit(b.subarray(0, 8));
        this.state = "chunk";
        return 8;
      case "chunk":
        return this.chunkHeader(b);
      case "sized":
        return this.sized(b);
      case "data":
        return this.data(b);
      case "crc":
        return this.checksum(b);
    }
  }

  private chunkHeader(b: Uint8Array): number {
    if (b.length < 8) return this.wait(8);
    const length = u32be(b, 0);
    if (length > 0x7fffffff) throw bad("chunk length out of range");
    this.type = ascii(b, 4, 4);
    if (!/^[A-Za-z]{4}$/.test(this.type)) throw bad("broken chunk structure");
    if (this.chunks++ === 0) {
      if (this.type !== "IHDR" || length !== 13) throw bad("the first chunk is not a valid IHDR");
    } else if (this.type === "IHDR") {
      throw bad("a second IHDR");
    }
    if (this.type in SIZED && length !== SIZED[this.type]) throw bad(`a ${this.type} chunk of ${length} bytes`);
    const critical = this.type[0]! >= "A" && this.type[0]! <= "Z";
    if (critical && !KEEP.has(this.type)) throw bad(`unknown critical chunk ${this.type}`);
    if (this.type === "IDAT") this.sawIdat = true;
    this.keep = KEEP.has(this.type);
    this.left = length;
    this.crc = crc32(b.subarray(4, 8));
    if (this.keep) this.emit(b.subarray(0, 8));
    this.state = this.type in SIZED ? "sized" : length > 0 ? "data" : "crc";
    return 8;
  }

  private sized(b: Uint8Array): number {
    if (b.length < this.left) return this.wait(this.left);
    const data = b.subarray(0, this.left);
    if (this.type === "IHDR") this.checkHeader(data);
    else this.checkFrame(data);
    this.crc = crc32(data, this.crc);
    this.emit(data);
    this.state = "crc";
    return data.length;
  }

  private data(b: Uint8Array): number {
    const data = b.subarray(0, Math.min(this.left, b.length));
    this.crc = crc32(data, this.crc);
    if (this.keep) this.emit(data);
    this.left -= data.length;
    if (this.left === 0) this.state = "crc";
    return data.length;
  }

  private checksum(b: Uint8Array): number {
    if (b.length < 4) return this.wait(4);
    if (u32be(b, 0) !== this.crc) throw bad(`checksum mismatch in ${this.type}`);
    if (this.keep) this.emit(b.subarray(0, 4));
    this.state = "chunk";
    if (this.type === "IEND") {
      if (!this.sawIdat) throw bad("no image data");
      this.finished = true;
    }
    return 4;
  }

  private checkHeader(b: Uint8Array) {
    this.width = u32be(b, 0);
    this.height = u32be(b, 4);
    if (!this.width || !this.height) throw bad("zero width or height");
    assertWithinSideLimit(this.width, this.height);
    const depth = b[8]!;
    const colour = b[9]!;
    if (!VALID_DEPTHS[colour]?.includes(depth)) throw bad(`invalid colour type ${colour} with bit depth ${depth}`);
    if (b[10] !== 0 || b[11] !== 0 || b[12]! > 1) throw bad("invalid compression, filter or interlace method");
  }

  /** An APNG frame must lie within the image (decoders differ on what to do with one that does not). */
  private checkFrame(b: Uint8Array) {
    const [width, height, x, y] = [u32be(b, 4), u32be(b, 8), u32be(b, 12), u32be(b, 16)];
    if (!width || !height) throw bad("an animation frame without a size");
    if (x + width > this.width || y + height > this.height) {
      throw bad(`an animation frame of ${width}x${height} at ${x},${y} outside the ${this.width}x${this.height} image`);
    }
  }

  protected checkComplete() {
    if (!this.finished) throw bad("the file is truncated");
  }
}
