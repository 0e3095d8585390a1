import { concatBytes } from "../../bytes";
import { unprocessable } from "../../errors";
import { HEADER_LIMIT, readImageHeader, type ImageInfo } from "../../media/image-info";
import { assertWithinSideLimit } from "../../media/side-limit";
import { ACCEPTED_FORMATS_TEXT, SNIFF_BYTES, sniff, type Sniffed } from "../../media/sniff";
import { newObjectKey } from "../../storage/keys";
import { ObjectWriter, type WrittenObject } from "../../storage/object-writer";
import { stripperFor, type Stripper } from "../../media/strip";
import { toHex } from "../../crypto";

/** A file streamed into storage for an upload that may not exist yet. */
export interface StagedFile extends WrittenObject {
  /** SHA-256 (hex) of the bytes as received, before any metadata was removed. */
  sha256: string;
  media: Sniffed;
  /** Images only: size and orientation from the header. */
  image: ImageInfo | null;
}

export interface StagingLimit {
  maxBytes: number;
  error: () => Error;
}

/**
 * Headers with large EXIF blocks (camera previews) still fit well within this. The header reader
 * sees no more than this, whatever the size of the pieces the file arrives in, so that what it
 * accepts is what the later jobs (which read this much of the stored file) see.
 */
const MAX_HEADER_BYTES = HEADER_LIMIT;

type Identified = { media: Sniffed; image: ImageInfo | null };

/**
 * Decides what the file is from its first bytes, and for an image its size, refusing what the
 * service does not take before anything is stored. Null means "send more bytes".
 */
function identify(head: Uint8Array, complete: boolean): Identified | null {
  if (head.length < SNIFF_BYTES && !complete) return null;
  const media = sniff(head);
  if (!media) throw unprocessable(`Unsupported file type. Accepted: ${ACCEPTED_FORMATS_TEXT}.`);
  if (media.type !== "image") return { media, image: null };
  const bounded = head.subarray(0, MAX_HEADER_BYTES);
  const header = readImageHeader(media.format, bounded, complete && bounded.length === head.length);
  if ("invalid" in header) throw unprocessable(`Unreadable image data (${media.ext}): ${header.invalid}.`);
  if ("need" in header) {
    if (head.length >= MAX_HEADER_BYTES) throw unprocessable(`Unreadable image data (${media.ext}): no image size in the first MB.`);
    if (complete) throw unprocessable(`Unreadable image data (${media.ext}): the file is truncated.`);
    return null;
  }
  assertWithinSideLimit(header.width, header.height);
  if (header.largest) assertWithinSideLimit(header.largest.width, header.largest.height);
  return { media, image: header };
}

/** The stored object, fed through the format's metadata remover when it has one. */
class StrippingWriter {
  readonly writer: ObjectWriter;
  private readonly stripper: Stripper | null;

  constructor(bucket: R2Bucket, uploadId: string, readonly identified: Identified) {
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
}

async function startWriting(bucket: R2Bucket, uploadId: string, head: Uint8Array, identified: Identified) {
  const writer = new StrippingWriter(bucket, uploadId, identified);
  await writer.write(head);
  return writer;
}

/** SHA-256 of a stream, fed as it goes. */
function hasher() {
  const digest = new crypto.DigestStream("SHA-256");
  const writer = digest.getWriter();
  // An abandoned upload leaves these rejected with nobody waiting; that must not surface as unhandled.
  writer.closed.catch(() => {});
  digest.digest.catch(() => {});
  return {
    write: (chunk: Uint8Array) => writer.write(chunk),
    async hex() {
      await writer.close();
      return toHex(await digest.digest);
    },
    abort: () => writer.abort().catch(() => {}),
  };
}

/**
 * Streams a file into R2 as a new object of the upload, deciding its type (and an image's size)
 * from its first bytes. Nothing stays stored for a refused file or on any failure while it
 * streams; once it is stored, dropping it is the caller's (Staging.discard). Returns null for an
 * empty file.
 */
export async function stageFile(
  bucket: R2Bucket,
  uploadId: string,
  chunks: AsyncIterable<Uint8Array>,
  limit?: StagingLimit,
): Promise<StagedFile | null> {
  const head: Uint8Array[] = [];
  let headBytes = 0;
  // The head is joined and identified each time it has doubled: linear in its size, however small the pieces.
  let identifyAt = SNIFF_BYTES;
  let received = 0;
  const hash = hasher();
  let opened: StrippingWriter | null = null;
  try {
    for await (const chunk of chunks) {
      received += chunk.byteLength;
      if (limit && received > limit.maxBytes) throw limit.error();
      await hash.write(chunk);
      if (opened) {
        await opened.write(chunk);
        continue;
      }
      head.push(chunk);
      headBytes += chunk.byteLength;
      if (headBytes < identifyAt) continue;
      const bytes = concatBytes(head);
      head.splice(0, head.length, bytes);
      identifyAt = Math.min(2 * headBytes, MAX_HEADER_BYTES);
      const identified = identify(bytes, false);
      if (identified) opened = await startWriting(bucket, uploadId, bytes, identified);
    }
    if (!opened) {
      if (headBytes === 0) {
        await hash.abort();
        return null;
      }
      const bytes = concatBytes(head);
      opened = await startWriting(bucket, uploadId, bytes, identify(bytes, true)!);
    }
    const stored = await opened.finish();
    return { ...stored, sha256: await hash.hex(), media: opened.identified.media, image: opened.identified.image };
  } catch (error) {
    await hash.abort();
    await opened?.writer.abort();
    throw error;
  }
}

/**
 * The files one request has staged, and the one way they are dropped: whatever fails before the
 * upload points at a file, and whatever file the upload does not keep, goes through discard().
 */
export class Staging {
  private staged: StagedFile[] = [];

  constructor(
    private readonly bucket: R2Bucket,
    private readonly uploadId: string,
  ) {}

  async stage(chunks: AsyncIterable<Uint8Array>, limit?: StagingLimit): Promise<StagedFile | null> {
    const file = await stageFile(this.bucket, this.uploadId, chunks, limit);
    if (file) this.staged.push(file);
    return file;
  }

  async discard(): Promise<void> {
    if (this.staged.length === 0) return;
    await this.bucket.delete(this.staged.map((file) => file.key));
    this.staged = [];
  }
}
