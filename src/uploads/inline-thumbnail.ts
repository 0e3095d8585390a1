import { HEADER_LIMIT } from "../media/image-info";
import { describeImage } from "../media/image/render";
import { renderInWorker } from "../media/image/worker-engine";
import { newObjectKey } from "../storage/keys";
import { KEPT_BYTES } from "../storage/object-writer";
import type { StagedFile } from "./intake/staged-file";
import type { Stores } from "../storage/stores";
import { THUMB_WIDTH } from "../model/spec-limits";
import { webpPlan } from "../media/image/webp-plan";
import type { PlaceholderColumns } from "../storage/upload-placeholders";
import { placeholderFromPixels } from "./placeholders";

/**
 * A small image's thumbnail, made in its upload's own request: all a media job would do for
 * it, so it gets none, and its thumbnail is there when the upload answers. A job costs three
 * more trips to D1 (its row, its claim, the swap) and a second read of the file, more than the
 * thumbnail itself for the screenshots and photos most uploads are.
 *
 * Only images that need nothing else (no conversion to WebP) and that the Worker's codecs take
 * within these bounds, so that the answer is not held up; anything else, or any failure, is left
 * to the media job as before.
 */
const INLINE_MAX_BYTES = KEPT_BYTES;
const INLINE_MAX_PIXELS = 1_000_000;

/**
 * The thumbnail's key once written, with its placeholder (made of the pixels just encoded), or
 * null when the media job is to make them.
 */
export async function thumbnailInline(
  deps: Stores,
  uploadId: string,
  file: StagedFile,
  keepOriginal: boolean,
): Promise<{ thumbKey: string; placeholder: PlaceholderColumns } | null> {
  const { image, media } = file;
  if (!image || media.type !== "image" || file.size > INLINE_MAX_BYTES) return null;
  if (image.storedWidth * image.storedHeight > INLINE_MAX_PIXELS) return null;
  if (webpPlan({ mime: media.mime, keepOriginal, size: file.size }, null)) return null;
  try {
    const bytes = file.bytes ?? (await readObject(deps.bucket, file.key));
    if (!bytes) return null;
    const described = describeImage(bytes.subarray(0, HEADER_LIMIT), bytes.length);
    if (!described) return null;
    const { result } = await renderInWorker(described, { kind: "thumbnail", width: THUMB_WIDTH }, async () => bytes);
    if (!result) return null;
    const thumbKey = newObjectKey(uploadId, "webp");
    await deps.bucket.put(thumbKey, result.bytes, { httpMetadata: { contentType: "image/webp" } });
    return { thumbKey, placeholder: placeholderFromPixels(uploadId, result.pixels) };
  } catch (error) {
    console.log(JSON.stringify({ upload: uploadId, inlineThumbnail: String(error) }));
    return null;
  }
}

async function readObject(bucket: R2Bucket, key: string) {
  const object = await bucket.get(key);
  return object ? new Uint8Array(await object.arrayBuffer()) : null;
}
