import { malformed, UnitStripper } from "./stripper";

const bad = (reason: string) => malformed("gif", reason);

/** Application extensions that affect display: looping of animations, and colour profiles. */
const KEEP_APPLICATIONS = ["NETSCAPE2.0", "ANIMEXTS1.0", "ICCRGBG1012"];

/** Removes comments and metadata application extensions (XMP and others) from a GIF. */
export class GifStripper extends UnitStripper {
  private state: "header" | "block" | "subblocks" = "header";
  private keep = true;

  protected step(b: Uint8Array): number {
    if (this.state === "header") {
      if (b.length < 13) return 0;
      const table = b[10]! & 0x80 ? 3 * 2 ** ((b[10]! & 7) + 1) : 0;
      if (b.length < 13 + table) return 0;
      this.emit(b.subarray(0, 13 + table));
      this.state = "block";
      return 13 + table;
    }
    if (this.state === "subblocks") {
      const size = b[0]!;
      if (b.length < 1 + size) return 0;
      if (this.keep) this.emit(b.subarray(0, 1 + size));
      if (size === 0) this.state = "block";
      return 1 + size;
    }
    const introducer = b[0]!;
    if (introducer === 0x3b) {
      // A GIF without any image is valid (an empty canvas, as the smallest GIFs are).
      this.emit(b.subarray(0, 1));
      this.finished = true;
      return 1;
    }
    if (introducer === 0x2c) {
      if (b.length < 10) return 0;
      const table = b[9]! & 0x80 ? 3 * 2 ** ((b[9]! & 7) + 1) : 0;
      if (b.length < 11 + table) return 0; // descriptor, colour table, LZW minimum code size
      this.emit(b.subarray(0, 11 + table));
      this.keep = true;
      this.state = "subblocks";
      return 11 + table;
    }
    if (introducer === 0x21) {
      if (b.length < 2) return 0;
      const label = b[1]!;
      if (label === 0xff) {
        // The application identifier is the first sub-block (11 bytes).
        if (b.length < 3 || b.length < 3 + b[2]!) return 0;
        const id = String.fromCharCode(...b.subarray(3, 3 + b[2]!));
        this.keep = KEEP_APPLICATIONS.includes(id);
      } else {
        this.keep = label === 0xf9 || label === 0x01; // graphic control, plain text
      }
      if (this.keep) this.emit(b.subarray(0, 2));
      this.state = "subblocks";
      return 2;
    }
    throw bad(`unexpected block 0x${introducer.toString(16)}`);
  }

  protected checkComplete() {
    if (!this.finished) throw bad("the file is truncated");
  }
}
