import { concatBytes } from "../bytes";
import { ACCEPTED_FORMATS_TEXT, SNIFF_BYTES, sniff, type Sniffed } from "../media/sniff";
import { unprocessable } from "../errors";
import { newObjectKey } from "../storage/keys";
import { ObjectWriter, type WrittenObject } from "../storage/object-writer";

export interface IngestedFile extends WrittenObject {
  media: Sniffed;
}

export interface IngestLimit {
  maxBytes: number;
  error: () => Error;
}

/** Opens the object for a file whose first bytes are `head`, or refuses an unsupported type. */
async function open(bucket: R2Bucket, uploadId: string, head: Uint8Array) {
  const media = sniff(head);
  if (!media) throw unprocessable(`Unsupported file type. Accepted: ${ACCEPTED_FORMATS_TEXT}.`);
  const writer = new ObjectWriter(bucket, newObjectKey(uploadId, media.ext), media.mime);
  await writer.write(head);
  return { media, writer };
}

/**
 * Streams a file into R2 as a new object of the upload, deciding its type from its first bytes.
 * Nothing stays stored for an unsupported file or on any failure. Returns null for an empty file.
 */
export async function ingestFile(
  bucket: R2Bucket,
  uploadId: string,
  chunks: AsyncIterable<Uint8Array>,
  limit?: IngestLimit,
): Promise<IngestedFile | null> {
  const head: Uint8Array[] = [];
  let headBytes = 0;
  let opened: Awaited<ReturnType<typeof open>> | null = null;
  try {
    for await (const chunk of chunks) {
      if (opened) {
        await opened.writer.write(chunk);
      } else {
        head.push(chunk);
        headBytes += chunk.byteLength;
        if (headBytes >= SNIFF_BYTES) opened = await open(bucket, uploadId, concatBytes(head));
      }
      if (limit && (opened?.writer.bytesWritten ?? headBytes) > limit.maxBytes) throw limit.error();
    }
    if (!opened) {
      if (headBytes === 0) return null;
      opened = await open(bucket, uploadId, concatBytes(head));
    }
    return { ...(await opened.writer.finish()), media: opened.media };
  } catch (error) {
    await opened?.writer.abort();
    throw error;
  }
}
