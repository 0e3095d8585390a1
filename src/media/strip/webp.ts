import { malformed, UnitStripper } from "./stripper";

const bad = (reason: string) => malformed("webp", reason);

const VP8X_EXIF = 0x08;
const VP8X_XMP = 0x04;

/**
 * Removes EXIF and XMP chunks from a WebP and clears their VP8X flags. The RIFF size at the
 * start changes, so the writer holds the first bytes back and patches them at the end.
 */
export class WebpStripper extends UnitStripper {
  private state: "riff" | "chunk" | "data" = "riff";
  private left = 0;
  private keep = true;
  private declared = 0;
  private consumed = 0;
  private sawImage = false;

  protected step(b: Uint8Array): number {
    const used = this.unit(b);
    this.consumed += used;
    if (this.state === "chunk" && this.consumed >= this.declared + 8) {
      if (!this.sawImage) throw bad("no image data");
      this.finished = true;
    }
    return used;
  }

  private unit(b: Uint8Array): number {
    if (this.state === "riff") {
      if (b.length < 12) return 0;
      this.declared = b[4]! | (b[5]! << 8) | (b[6]! << 16) | (b[7]! << 24);
      if (this.declared < 4) throw bad("broken RIFF size");
      this.emit(b.subarray(0, 12));
      this.state = "chunk";
      return 12;
    }
    if (this.state === "data") {
      const n = Math.min(this.left, b.length);
      if (this.keep) this.emit(b.subarray(0, n));
      this.left -= n;
      if (this.left === 0) this.state = "chunk";
      return n;
    }
    if (b.length < 8) return 0;
    const type = String.fromCharCode(b[0]!, b[1]!, b[2]!, b[3]!);
    const size = (b[4]! | (b[5]! << 8) | (b[6]! << 16) | (b[7]! << 24)) >>> 0;
    const padded = size + (size & 1);
    if (["VP8 ", "VP8L", "ANMF"].includes(type)) this.sawImage = true;
    this.keep = type !== "EXIF" && type !== "XMP ";
    if (type === "VP8X") {
      if (b.length < 8 + padded) return 0;
      const chunk = b.slice(0, 8 + padded);
      chunk[8] = chunk[8]! & ~(VP8X_EXIF | VP8X_XMP);
      this.emit(chunk);
      return 8 + padded;
    }
    if (this.keep) this.emit(b.subarray(0, 8));
    this.left = padded;
    this.state = padded > 0 ? "data" : "chunk";
    return 8;
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
