import { unprocessable } from "../../errors";
import { readImageHeader } from "../../media/image-header";
import { animationKnown, HEADER_LIMIT, isAnimated, type ImageInfo } from "../../media/image-info";
import { assertWithinSideLimit } from "../../media/side-limit";
import { ACCEPTED_FORMATS_TEXT, SNIFF_BYTES, sniff, type Sniffed } from "../../media/sniff";

/**
 * Headers with large EXIF blocks (camera previews) still fit well within this. The header reader
 * sees no more than this, whatever the size of the pieces the file arrives in, so that what it
 * accepts is what the later jobs (which read this much of the stored file) see.
 */
export const MAX_HEADER_BYTES = HEADER_LIMIT;

/** What a file is, as its first bytes say: its type, an image's header, and whether it moves. */
export type Identified = { media: Sniffed; image: ImageInfo | null; animated: boolean };

/**
 * Decides what the file is from its first bytes, and for an image its size, refusing what the
 * service does not take before anything is stored. Null means "send more bytes".
 */
export function identify(head: Uint8Array, complete: boolean): Identified | null {
  if (head.length < SNIFF_BYTES && !complete) return null;
  const media = sniff(head);
  if (!media) throw unprocessable(`Unsupported file type. Accepted: ${ACCEPTED_FORMATS_TEXT}.`);
  if (media.type !== "image") return { media, image: null, animated: false };
  const bounded = head.subarray(0, MAX_HEADER_BYTES);
  const header = readImageHeader(media.format, bounded, complete && bounded.length === head.length);
  if ("invalid" in header) throw unprocessable(`Unreadable image data (${media.ext}): ${header.invalid}.`);
  if ("need" in header) {
    if (head.length >= MAX_HEADER_BYTES)
      throw unprocessable(`Unreadable image data (${media.ext}): no image size in the first MB.`);
    if (complete) throw unprocessable(`Unreadable image data (${media.ext}): the file is truncated.`);
    return null;
  }
  assertWithinSideLimit(header.width, header.height);
  if (header.largest) assertWithinSideLimit(header.largest.width, header.largest.height);
  // Its size is known, but perhaps not yet whether it moves (a PNG's acTL after large chunks).
  if (!complete && !animationKnown(media.format, head)) return null;
  return { media, image: header, animated: isAnimated(media.format, head) };
}
