import { newObjectKey, objectName } from "../../storage/keys";
import { ObjectWriter, type WrittenObject } from "../../storage/object-writer";
import { stripperFor, type Stripper } from "../../media/strip";
import type { Identified } from "./identify";

/** Where a file's bytes go once its type is known: written to storage, or checked against it. */
export interface FileSink {
  write(chunk: Uint8Array): Promise<void>;
  finish(): Promise<WrittenObject>;
  abort(): Promise<void>;
}

/** The stored object, fed through the format's metadata remover when it has one. */
export class StrippingWriter implements FileSink {
  private readonly writer: ObjectWriter;
  private readonly stripper: Stripper | null;

  constructor(bucket: R2Bucket, uploadId: string, identified: Identified) {
    this.stripper = stripperFor(identified.media.format);
    this.writer = new ObjectWriter(bucket, newObjectKey(uploadId, identified.media.ext), {
      contentType: identified.media.mime,
      patchHead: this.stripper?.patchHead?.bind(this.stripper),
    });
  }

  async write(chunk: Uint8Array) {
    if (!this.stripper) return this.writer.write(chunk);
    for (const piece of this.stripper.push(chunk)) await this.writer.write(piece);
  }

  async finish() {
    if (this.stripper) for (const piece of this.stripper.end()) await this.writer.write(piece);
    return this.writer.finish();
  }

  abort() {
    return this.writer.abort();
  }
}

/** Thrown by UnchangedCheck: removing metadata would change the stored file, or its name does not fit its type. */
export class StoredFileDiffers extends Error {}

const sameBytes = (a: Uint8Array, b: Uint8Array) => {
  if (a.buffer === b.buffer && a.byteOffset === b.byteOffset) return true;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
};

/**
 * For a file already stored whole: runs it through the metadata remover and checks that what
 * comes out is the file itself, so that it can be kept as it is instead of written again. It
 * gives up (StoredFileDiffers) at the first byte the remover would change.
 */
export class UnchangedCheck implements FileSink {
  private readonly stripper: Stripper | null;
  /** Input the remover has not given back yet: never more than it holds between pushes. */
  private unmatched: Uint8Array[] = [];
  private size = 0;

  constructor(
    key: string,
    private readonly stored: () => WrittenObject,
    private readonly head: Uint8Array,
    identified: Identified,
  ) {
    this.stripper = stripperFor(identified.media.format);
    if (objectName(key).split(".").pop() !== identified.media.ext) throw new StoredFileDiffers();
  }

  async write(chunk: Uint8Array) {
    this.size += chunk.byteLength;
    if (!this.stripper) return;
    this.unmatched.push(chunk);
    for (const out of this.stripper.push(chunk)) this.match(out);
  }

  private match(out: Uint8Array) {
    for (let at = 0; at < out.length; ) {
      const next = this.unmatched[0];
      if (!next) throw new StoredFileDiffers();
      const n = Math.min(next.length, out.length - at);
      if (!sameBytes(next.subarray(0, n), out.subarray(at, at + n))) throw new StoredFileDiffers();
      at += n;
      if (n === next.length) this.unmatched.shift();
      else this.unmatched[0] = next.subarray(n);
    }
  }

  async finish() {
    if (this.stripper) {
      for (const out of this.stripper.end()) this.match(out);
      // Bytes the remover dropped (after the image's end, say) are a change too.
      if (this.unmatched.some((rest) => rest.length > 0)) throw new StoredFileDiffers();
      if (this.stripper.patchHead) {
        const patched = this.head.slice();
        this.stripper.patchHead(patched, this.size);
        if (!sameBytes(patched, this.head)) throw new StoredFileDiffers();
      }
    }
    const stored = this.stored();
    if (this.size !== stored.size) throw new StoredFileDiffers();
    return stored;
  }

  async abort() {}
}
