import { toHex } from "../crypto";
import { MiB } from "../config";

/**
 * Writes a stream of unknown length to R2 with bounded memory, hashing it on the way.
 * R2's put() needs a known length, so small files go up in one put and anything larger
 * than one part goes up as a multipart upload of equal-sized parts.
 */
export const PART_BYTES = 8 * MiB;

export interface WrittenObject {
  key: string;
  size: number;
  sha256: string;
  etag: string;
}

export class ObjectWriter {
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private size = 0;
  private multipart: R2MultipartUpload | null = null;
  private parts: R2UploadedPart[] = [];
  private readonly digest = new crypto.DigestStream("SHA-256");
  private readonly digestWriter = this.digest.getWriter();
  constructor(
    private readonly bucket: R2Bucket,
    readonly key: string,
    private readonly contentType: string,
  ) {
    // Aborting rejects these; only finish() waits on them, so an abort must not leave them unhandled.
    this.digestWriter.closed.catch(() => {});
    this.digest.digest.catch(() => {});
  }
  private finished = false;


  get bytesWritten() {
    return this.size;
  }

  async write(chunk: Uint8Array): Promise<void> {
    if (chunk.byteLength === 0) return;
    this.size += chunk.byteLength;
    await this.digestWriter.write(chunk);
    this.pending.push(chunk);
    this.pendingBytes += chunk.byteLength;
    while (this.pendingBytes >= PART_BYTES) await this.flushPart();
  }

  /** Takes exactly PART_BYTES off the front of the pending bytes and uploads them. */
  private async flushPart(): Promise<void> {
    this.multipart ??= await this.bucket.createMultipartUpload(this.key, {
      httpMetadata: { contentType: this.contentType },
    });
    const part = this.take(PART_BYTES);
    this.parts.push(await this.multipart.uploadPart(this.parts.length + 1, part));
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
    this.finished = true;
    await this.digestWriter.close();
    const sha256 = toHex(await this.digest.digest);
    const rest = this.take(this.pendingBytes);
    let etag: string;
    if (!this.multipart) {
      const object = await this.bucket.put(this.key, rest, { httpMetadata: { contentType: this.contentType } });
      etag = object.httpEtag;
    } else {
      if (rest.byteLength > 0) this.parts.push(await this.multipart.uploadPart(this.parts.length + 1, rest));
      etag = (await this.multipart.complete(this.parts)).httpEtag;
    }
    return { key: this.key, size: this.size, sha256, etag };
  }

  /** Drops whatever was written; safe to call at any point, including after finish(). */
  async abort(): Promise<void> {
    this.pending = [];
    this.pendingBytes = 0;
    if (!this.finished) await this.digestWriter.abort().catch(() => {});
    if (this.multipart) await this.multipart.abort().catch(() => {});
    await this.bucket.delete(this.key).catch(() => {});
  }
}
