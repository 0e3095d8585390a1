import { ascii, u16le } from "../../bytes";
import { assertWithinSideLimit } from "../side-limit";
import { malformed, UnitStripper } from "./stripper";

const bad = (reason: string) => malformed("gif", reason);

/** Application extensions that affect display: looping of animations, and colour profiles. */
const KEEP_APPLICATIONS = ["NETSCAPE2.0", "ANIMEXTS1.0", "ICCRGBG1012"];

const colourTable = (flags: number) => (flags & 0x80 ? 3 * 2 ** ((flags & 7) + 1) : 0);

/**
 * Removes comments and metadata application extensions (XMP and others) from a GIF. Its units
 * are small by construction (sub-blocks of at most 255 bytes, colour tables of at most 768).
 */
export class GifStripper extends UnitStripper {
  private state: "header" | "block" | "subblocks" = "header";
  private keep = true;

  protected step(b: Uint8Array): number {
    if (this.state === "header") {
      if (b.length < 13) return this.wait(13);
      const size = 13 + colourTable(b[10]!);
      if (b.length < size) return this.wait(size);
      assertWithinSideLimit(u16le(b, 6), u16le(b, 8));
      this.emit(b.subarray(0, size));
      this.state = "block";
      return size;
    }
    if (this.state === "subblocks") {
      const size = 1 + b[0]!;
      if (b.length < size) return this.wait(size);
      if (this.keep) this.emit(b.subarray(0, size));
      if (size === 1) this.state = "block";
      return size;
    }
    const introducer = b[0]!;
    if (introducer === 0x3b) {
      // A GIF without any image is valid (an empty canvas, as the smallest GIFs are).
      this.emit(b.subarray(0, 1));
      this.finished = true;
      return 1;
    }
    if (introducer === 0x2c) return this.image(b);
    if (introducer === 0x21) {
      if (b.length < 2) return this.wait(2);
      const label = b[1]!;
      if (label === 0xff) {
        // The application identifier is the first sub-block (11 bytes).
        if (b.length < 3) return this.wait(3);
        if (b.length < 3 + b[2]!) return this.wait(3 + b[2]!);
        const id = ascii(b, 3, b[2]!);
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

  /**
   * Every frame's extent is checked, not only the logical screen's: decoders that grow the
   * canvas to fit a frame would otherwise allocate what the screen size hid.
   */
  private image(b: Uint8Array): number {
    if (b.length < 10) return this.wait(10);
    const size = 11 + colourTable(b[9]!); // descriptor, colour table, LZW minimum code size
    if (b.length < size) return this.wait(size);
    assertWithinSideLimit(u16le(b, 1) + u16le(b, 5), u16le(b, 3) + u16le(b, 7));
    this.emit(b.subarray(0, size));
    this.keep = true;
    this.state = "subblocks";
    return size;
  }

  protected checkComplete() {
    if (!this.finished) throw bad("the file is truncated");
  }
}
