import { crc32 } from "./crc32";
import { malformed, UnitStripper } from "./stripper";

/** Chunks that describe pixels, colour or animation; everything else ancillary is dropped. */
const KEEP = new Set([
  "IHDR", "PLTE", "IDAT", "IEND", "tRNS", "cHRM", "gAMA", "iCCP", "sBIT", "sRGB", "cICP", "mDCV", "cLLI",
  "bKGD", "hIST", "pHYs", "sPLT", "acTL", "fcTL", "fdAT",
]);

const VALID_DEPTHS: Record<number, number[]> = { 0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16] };

const bad = (reason: string) => malformed("png", reason);

/** Removes text, EXIF and time chunks, checking every chunk's CRC and the file's structure. */
export class PngStripper extends UnitStripper {
  private state: "signature" | "chunk" | "data" | "crc" = "signature";
  private type = "";
  private left = 0;
  private keep = false;
  private crc = 0;
  private chunks = 0;
  private sawIdat = false;

  protected step(b: Uint8Array): number {
    switch (this.state) {
      case "signature":
        if (b.length < 8) return 0;
        this.emit(b.subarray(0, 8));
        this.state = "chunk";
        return 8;
      case "chunk": {
        if (b.length < 8) return 0;
        const length = ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0;
        if (length > 0x7fffffff) throw bad("chunk length out of range");
        this.type = String.fromCharCode(b[4]!, b[5]!, b[6]!, b[7]!);
        if (!/^[A-Za-z]{4}$/.test(this.type)) throw bad("broken chunk structure");
        if (this.chunks++ === 0 && (this.type !== "IHDR" || length !== 13)) throw bad("the first chunk is not a valid IHDR");
        const critical = this.type[0]! >= "A" && this.type[0]! <= "Z";
        if (critical && !KEEP.has(this.type)) throw bad(`unknown critical chunk ${this.type}`);
        if (this.type === "IDAT") this.sawIdat = true;
        this.keep = KEEP.has(this.type);
        this.left = length;
        this.crc = crc32(b.subarray(4, 8));
        if (this.keep) this.emit(b.subarray(0, 8));
        this.state = "data";
        return 8;
      }
      case "data": {
        if (this.type === "IHDR" && b.length < 13) return 0;
        const n = Math.min(this.left, b.length);
        if (this.type === "IHDR") this.checkHeader(b);
        const data = b.subarray(0, n);
        this.crc = crc32(data, this.crc);
        if (this.keep) this.emit(data);
        this.left -= n;
        if (this.left === 0) this.state = "crc";
        return n === 0 && this.left === 0 ? this.crcStep(b) : n;
      }
      case "crc":
        return this.crcStep(b);
    }
  }

  private crcStep(b: Uint8Array): number {
    if (b.length < 4) return 0;
    const stored = ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0;
    if (stored !== this.crc) throw bad(`checksum mismatch in ${this.type}`);
    if (this.keep) this.emit(b.subarray(0, 4));
    this.state = "chunk";
    if (this.type === "IEND") {
      if (!this.sawIdat) throw bad("no image data");
      this.finished = true;
    }
    return 4;
  }

  private checkHeader(b: Uint8Array) {
    const depth = b[8]!;
    const colour = b[9]!;
    if (!VALID_DEPTHS[colour]?.includes(depth)) throw bad(`invalid colour type ${colour} with bit depth ${depth}`);
    if (b[10] !== 0 || b[11] !== 0 || b[12]! > 1) throw bad("invalid compression, filter or interlace method");
  }

  protected checkComplete() {
    if (!this.finished) throw bad("the file is truncated");
  }
}
