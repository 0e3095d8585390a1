import { createHash } from "node:crypto";
import { concatBytes } from "../../bytes";
import { SNIFF_BYTES, type Sniffed } from "../../media/sniff";
import type { ImageInfo } from "../../media/image-info";
import { PART_BYTES, type WrittenObject } from "../../storage/object-writer";
import { isolateMemory, type Reservation } from "../../limits/isolate-memory";
import { MiB } from "../../model/spec-limits";
import { StrippingWriter, UnchangedCheck, type FileSink } from "./file-sinks";
import { identify, MAX_HEADER_BYTES, type Identified } from "./identify";

/** A file streamed into storage for an upload that may not exist yet. */
export interface StagedFile extends WrittenObject {
  /** SHA-256 (hex) of the bytes as received, before any metadata was removed. */
  sha256: string;
  media: Sniffed;
  /** Images only: size and orientation from the header. */
  image: ImageInfo | null;
  /** An animated image (a GIF, an animated PNG or WebP), as its first bytes say. */
  animated: boolean;
}

interface StagingLimit {
  maxBytes: number;
  error: () => Error;
}

/**
 * What reading a file may hold once `received` bytes have come: the part being gathered for
 * storage and the copy made when it is written (ObjectWriter), and room for the chunk in hand
 * and the file's head.
 */
const stagingBytes = (received: number) => 2 * Math.min(received, PART_BYTES) + MiB;

/**
 * Reads a file as its bytes come, deciding its type (and an image's size) from its first bytes,
 * hashing it, and handing it to the sink that `open` makes once the type is known. After a
 * failure, abort() must be called: it aborts the sink.
 */
export class FileReading {
  private readonly head: Uint8Array[] = [];
  private headBytes = 0;
  // The head is joined and identified each time it has doubled: linear in its size, however small the pieces.
  private identifyAt = SNIFF_BYTES;
  private received = 0;
  /**
   * SHA-256 of the bytes as received. node:crypto's hash keeps its state in the runtime and
   * settles no promise: a reading of pieces is fed by one request and ended by a later one, and a
   * promise made by a request that has ended can never settle (the runtime's
   * handle_cross_request_promise_resolution, on by compatibility date; docs/architecture.md,
   * "Pieces").
   */
  private readonly hash = createHash("sha256");
  private opened: { sink: FileSink; identified: Identified } | null = null;

  constructor(
    private readonly limit: StagingLimit | undefined,
    private readonly open: (head: Uint8Array, identified: Identified) => FileSink,
    /** This isolate's memory for the reading, grown as bytes come (none for a scan kept between requests). */
    private readonly memory?: Reservation,
  ) {}

  private async start(bytes: Uint8Array, identified: Identified) {
    const started = { sink: this.open(bytes, identified), identified };
    this.opened = started;
    await started.sink.write(bytes);
    return started;
  }

  async push(chunk: Uint8Array): Promise<void> {
    this.received += chunk.byteLength;
    if (this.limit && this.received > this.limit.maxBytes) throw this.limit.error();
    await this.memory?.growTo(stagingBytes(this.received));
    this.hash.update(chunk);
    if (this.opened) return this.opened.sink.write(chunk);
    this.head.push(chunk);
    this.headBytes += chunk.byteLength;
    if (this.headBytes < this.identifyAt) return;
    const bytes = concatBytes(this.head);
    this.head.splice(0, this.head.length, bytes);
    this.identifyAt = Math.min(2 * this.headBytes, MAX_HEADER_BYTES);
    const identified = identify(bytes, false);
    if (identified) await this.start(bytes, identified);
  }

  /** The file as staged; null for an empty one. */
  async end(): Promise<StagedFile | null> {
    if (!this.opened) {
      if (this.headBytes === 0) return null;
      const bytes = concatBytes(this.head);
      await this.start(bytes, identify(bytes, true)!);
    }
    const { sink, identified } = this.opened!;
    const stored = await sink.finish();
    const { media, image, animated } = identified;
    return { ...stored, sha256: this.hash.digest("hex"), media, image, animated };
  }

  async abort(): Promise<void> {
    await this.opened?.sink.abort();
  }
}

async function readFile(
  chunks: AsyncIterable<Uint8Array>,
  limit: StagingLimit | undefined,
  open: (head: Uint8Array, identified: Identified) => FileSink,
): Promise<StagedFile | null> {
  const memory = isolateMemory.open();
  const reading = new FileReading(limit, open, memory);
  try {
    for await (const chunk of chunks) await reading.push(chunk);
    return await reading.end();
  } catch (error) {
    await reading.abort();
    throw error;
  } finally {
    memory.release();
  }
}

/**
 * Streams a file into R2 as a new object of the upload, its metadata removed. Nothing stays
 * stored for a refused file or on any failure while it streams; once it is stored, dropping it
 * is the caller's (Staging.discard). Returns null for an empty file.
 */
export function stageFile(
  bucket: R2Bucket,
  uploadId: string,
  chunks: AsyncIterable<Uint8Array>,
  limit?: StagingLimit,
): Promise<StagedFile | null> {
  return readFile(chunks, limit, (_head, identified) => new StrippingWriter(bucket, uploadId, identified));
}

/**
 * The same checks for a file already stored whole (`chunks` are its bytes): it is the staged
 * file as it is when removing metadata leaves it unchanged and its name fits its type; otherwise
 * this throws StoredFileDiffers and the file must be staged anew.
 */
export function stageAsStored(
  stored: WrittenObject,
  chunks: AsyncIterable<Uint8Array>,
  limit?: StagingLimit,
): Promise<StagedFile | null> {
  return readFile(chunks, limit, (head, identified) => new UnchangedCheck(stored.key, () => stored, head, identified));
}

/**
 * The same checks, fed the file's bytes before it is stored whole under `key` (pieces as they
 * arrive): end() then needs `stored()`, the object as it turned out.
 */
export function readingAsStored(key: string, stored: () => WrittenObject): FileReading {
  return new FileReading(undefined, (head, identified) => new UnchangedCheck(key, stored, head, identified));
}

/**
 * The files one request has staged, and the one way they are dropped: whatever fails before the
 * upload points at a file, and whatever file the upload does not keep, goes through discard().
 */
export class Staging {
  private staged: StagedFile[] = [];

  constructor(
    private readonly bucket: R2Bucket,
    private id: string,
  ) {}

  /** The upload the files are staged for. */
  get uploadId() {
    return this.id;
  }

  /** A file sent in pieces may bring the id reserved for it, which a new upload takes. */
  adopt(reservedUploadId: string) {
    if (this.staged.length) throw new Error("a reserved upload id is adopted before any file is staged");
    this.id = reservedUploadId;
  }

  async stage(chunks: AsyncIterable<Uint8Array>, limit?: StagingLimit): Promise<StagedFile | null> {
    const file = await stageFile(this.bucket, this.id, chunks, limit);
    if (file) this.staged.push(file);
    return file;
  }

  async discard(): Promise<void> {
    if (this.staged.length === 0) return;
    await this.bucket.delete(this.staged.map((file) => file.key));
    this.staged = [];
  }
}
