import { ascii, u32be, u64be } from "../../bytes";
import { malformed, UnitStripper } from "./stripper";

/**
 * Boxes whose children are walked: the movie, its tracks, and down to where a track's metadata
 * may sit; the fragments of a fragmented MP4 and their tracks, and `meco`, each of which may carry
 * `udta` or `meta` too.
 */
const CONTAINERS = new Set(["moov", "trak", "mdia", "minf", "moof", "traf", "meco"]);

/**
 * Boxes that hold metadata only, never anything playback needs: user data (QuickTime `©xyz`,
 * 3GPP `loci`, titles, dates) and `meta` (iTunes and QuickTime `mdta` keys, such as
 * `com.apple.quicktime.location.ISO6709`).
 */
const METADATA = new Set(["udta", "meta"]);

/** The `uuid` box type of XMP packets (which may carry a location). */
const XMP_UUID = [0xbe, 0x7a, 0xcf, 0xcb, 0x97, 0xa9, 0x42, 0xe8, 0x9c, 0x71, 0x99, 0x94, 0x91, 0xe3, 0xaf, 0xac];

const FREE = [0x66, 0x72, 0x65, 0x65];

/** Box types are four printable characters (QuickTime's also use ©). */
const isBoxType = (b: Uint8Array) =>
  [0, 1, 2, 3].every((i) => (b[4 + i]! >= 0x20 && b[4 + i]! <= 0x7e) || b[4 + i] === 0xa9);

/**
 * Neutralises the location-bearing boxes of an MP4, MOV, M4V or 3GP while it streams in, since
 * the file is served as uploaded until the media job remuxes it (and for good if that fails).
 * Each metadata box becomes a `free` box of the same size with zeroed content: no offset in the
 * file changes, so nothing else needs patching. Only box headers are ever held (at most 32
 * bytes); media data streams through.
 */
export class Mp4Stripper extends UnitStripper {
  private position = 0;
  /** Ends of the containers being walked, innermost last. */
  private readonly open: number[] = [];
  private left = 0;
  private zero = false;
  /** A top-level `moov` has been walked. */
  private movieSeen = false;

  constructor(private readonly format: string) {
    super();
  }

  private bad(reason: string) {
    return malformed(this.format, reason, "video");
  }

  protected step(b: Uint8Array): number {
    const used = this.left > 0 ? this.body(b) : this.header(b);
    this.position += used;
    while (this.left === 0 && this.open.length && this.open.at(-1) === this.position) this.open.pop();
    return used;
  }

  private body(b: Uint8Array): number {
    const n = Math.min(this.left, b.length);
    this.emit(this.zero ? new Uint8Array(n) : b.subarray(0, n));
    this.left -= n;
    return n;
  }

  private header(b: Uint8Array): number {
    const parentEnd = this.open.at(-1) ?? Infinity;
    if (b.length < 8) return this.wait(8);
    if (!isBoxType(b)) {
      if (this.open.length) throw this.bad("a box without a valid type");
      // Not a box: data appended after the last one (a phone's trailer, say) goes, as after an image's end.
      if (this.position === 0) throw this.bad("no box structure");
      this.finished = true;
      return b.length;
    }
    let size = u32be(b, 0);
    let headerBytes = 8;
    if (size === 1) {
      if (b.length < 16) return this.wait(16);
      size = u64be(b, 8);
      headerBytes = 16;
    } else if (size === 0) {
      // Runs to the end of its container, or of the file. At the top level, whatever follows is
      // this box's data and streams through unread: a movie header there (with its user data and
      // location) would be served as it came. A playable file has its moov before such a box.
      if (this.open.length === 0 && !this.movieSeen && ascii(b, 4, 4) !== "moov") {
        throw this.bad("a box that runs to the end of the file before the movie header (moov)");
      }
      size = parentEnd - this.position;
    }
    if (size < headerBytes) throw this.bad(`a box of ${size} bytes`);
    if (this.position + size > parentEnd) throw this.bad("a box larger than the box it is in");
    const type = ascii(b, 4, 4);
    if (type === "uuid") {
      if (size < headerBytes + 16) throw this.bad("a uuid box too short for its identifier");
      if (b.length < headerBytes + 16) return this.wait(headerBytes + 16);
    }
    if (type === "cmov") throw this.bad("compressed movie headers are not supported");
    const isXmp = type === "uuid" && XMP_UUID.every((v, i) => b[headerBytes + i] === v);
    const head = b.subarray(0, headerBytes);
    if (METADATA.has(type) || isXmp) {
      const renamed = head.slice();
      renamed.set(FREE, 4);
      this.emit(renamed);
      this.zero = true;
    } else {
      this.emit(head);
      this.zero = false;
    }
    if (type === "moov" && this.open.length === 0) this.movieSeen = true;
    if (CONTAINERS.has(type)) this.open.push(this.position + size);
    else this.left = size - headerBytes;
    return headerBytes;
  }

  protected checkComplete() {
    // Fewer bytes than a box header after the last top-level box: a trailer too, and left out.
    const strayTail = this.open.length === 0 && this.left === 0 && this.heldBytes() < 8;
    const unfinished = (this.left > 0 && this.left !== Infinity) || this.open.some((end) => end !== Infinity);
    if ((this.heldBytes() > 0 && !strayTail) || unfinished) throw this.bad("the file is truncated");
  }
}
