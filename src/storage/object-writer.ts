import { concatBytes } from "../bytes";
import { MiB } from "../model/spec-limits";

/**
 * Writes a stream of unknown length to R2 with bounded memory. R2's put() needs a known length,
 * so small files go up in one put and anything larger than one part goes up as a multipart
 * upload of equal-sized parts.
 */
export const PART_BYTES = 8 * MiB;

export interface WrittenObject {
  key: string;
  size: number;
  etag: string;
  /** The bytes as stored, for a file of at most KEPT_BYTES: what is made of it next need not read it back. */
  bytes?: Uint8Array;
}

/** Small enough to keep in memory for the rest of the request (an upload's own thumbnail). */
export const KEPT_BYTES = 512 * 1024;

interface WriterOptions {
  contentType: string;
  /**
   * For formats whose first bytes depend on the total size: the first part is held back and
   * handed to this before it is written (R2 accepts part 1 last).
   */
  patchHead?: (head: Uint8Array, totalBytes: number) => void;
}

export class ObjectWriter {
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private size = 0;
  private multipart: R2MultipartUpload | null = null;
  private parts: R2UploadedPart[] = [];
  private heldHead: Uint8Array | null = null;

  constructor(
    private readonly bucket: R2Bucket,
    readonly key: string,
    private readonly options: WriterOptions,
  ) {}

  get bytesWritten() {
    return this.size;
  }

  async write(chunk: Uint8Array): Promise<void> {
    if (chunk.byteLength === 0) return;
    this.size += chunk.byteLength;
    this.pending.push(chunk);
    this.pendingBytes += chunk.byteLength;
    while (this.pendingBytes >= PART_BYTES) await this.flushPart();
  }

  private nextPartNumber() {
    return this.parts.length + (this.heldHead ? 2 : 1);
  }

  /** Takes exactly PART_BYTES off the front of the pending bytes and uploads them. */
  private async flushPart(): Promise<void> {
    this.multipart ??= await this.bucket.createMultipartUpload(this.key, {
      httpMetadata: { contentType: this.options.contentType },
    });
    const part = this.take(PART_BYTES);
    if (this.options.patchHead && !this.heldHead && this.parts.length === 0) {
      this.heldHead = part;
      return;
    }
    this.parts.push(await this.multipart.uploadPart(this.nextPartNumber(), part));
  }

  private take(count: number): Uint8Array {
    const out = new Uint8Array(count);
    let filled = 0;
    while (filled < count) {
      const head = this.pending[0]!;
      const needed = count - filled;
      if (head.byteLength <= needed) {
        out.set(head, filled);
        filled += head.byteLength;
        this.pending.shift();
      } else {
        out.set(head.subarray(0, needed), filled);
        this.pending[0] = head.subarray(needed);
        filled += needed;
      }
    }
    this.pendingBytes -= count;
    return out;
  }

  async finish(): Promise<WrittenObject> {
    const rest = this.pendingBytes ? this.take(this.pendingBytes) : new Uint8Array();
    let etag: string;
    let bytes: Uint8Array | undefined;
    if (!this.multipart) {
      const whole = this.heldHead ? concatBytes([this.heldHead, rest]) : rest;
      this.options.patchHead?.(whole, this.size);
      const object = await this.bucket.put(this.key, whole, {
        httpMetadata: { contentType: this.options.contentType },
      });
      etag = object.httpEtag;
      if (whole.byteLength <= KEPT_BYTES) bytes = whole;
    } else {
      if (rest.byteLength > 0) this.parts.push(await this.multipart.uploadPart(this.nextPartNumber(), rest));
      if (this.heldHead) {
        this.options.patchHead?.(this.heldHead, this.size);
        this.parts.unshift(await this.multipart.uploadPart(1, this.heldHead));
      }
      etag = (await this.multipart.complete(this.parts)).httpEtag;
    }
    return { key: this.key, size: this.size, etag, ...(bytes && { bytes }) };
  }

  /** Drops whatever was written; safe to call at any point, including after finish(). */
  async abort(): Promise<void> {
    this.pending = [];
    this.pendingBytes = 0;
    this.heldHead = null;
    if (this.multipart) await this.multipart.abort().catch(() => {});
    await this.bucket.delete(this.key).catch(() => {});
  }
}
