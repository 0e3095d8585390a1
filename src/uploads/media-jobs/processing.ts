import { isImageFormat, isVideoFormat, type ImageFormat, type VideoCall } from "../../../container/src/contract";
import { HEADER_LIMIT } from "../../media/image-info";
import { describeImage, renderImage } from "../../media/image/render";
import { MediaServiceError, type MediaService, type ProgressWatch } from "../../media/service";
import { formatOfMime } from "../../media/sniff";
import { newObjectKey } from "../../storage/keys";
import { putNewFile, storedFile, storedHead } from "../../storage/stored-file";
import type { UploadRow } from "../../model/schema";
import type { ProcessedFile } from "../../storage/uploads";
import type { Stores } from "../../storage/stores";
import { THUMB_WIDTH } from "../../model/spec-limits";
import { OPTIMISE_MIN_SAVING, webpPlan } from "../../media/image/webp-plan";
import { NO_PLACEHOLDER_YET, placeholderFromPixels, placeholderFromStored, placeholderFromWebp } from "../placeholders";

/** The stores, and the media service that does the work too large for the Worker. */
export interface MediaDeps extends Stores {
  media: MediaService;
}

/**
 * The format the upload was sniffed as, which the media service is told to read the file as: a
 * video's for a video call, an image's for an image call.
 */
function sniffedFormat<F extends string>(
  upload: Pick<UploadRow, "id" | "mime">,
  kind: (format: string) => format is F,
): F {
  const format = formatOfMime(upload.mime);
  if (!format || !kind(format)) throw new Error(`upload ${upload.id} has a type no format gives: ${upload.mime}`);
  return format;
}

/**
 * A video as MP4 or WebM without its metadata, and its thumbnail. Every storage read and write is
 * made here, at one level: the media service is handed the stored file's bytes and answers.
 */
async function processVideo(
  deps: MediaDeps,
  upload: UploadRow,
  written: string[],
  watch?: ProgressWatch,
): Promise<ProcessedFile> {
  const keep = upload.mime === "video/mp4" || upload.mime === "video/webm";
  const format = upload.mime === "video/webm" ? "webm" : "mp4";
  // Stripping keeps the container: the input's format is the output's. The thumbnail of the
  // output comes with it, in the same answer.
  const call: VideoCall = keep
    ? { operation: "stripVideo", format, thumbnailWidth: THUMB_WIDTH }
    : { operation: "videoToMp4", format: sniffedFormat(upload, isVideoFormat), thumbnailWidth: THUMB_WIDTH };
  const source = await storedFile(deps.bucket, upload.objectKey);
  const { video, thumbnail } = await deps.media.call(call, source.body, source.size, watch);
  const mime = `video/${format}`;
  const objectKey = newObjectKey(upload.id, format);
  const stored = await putNewFile(deps.bucket, objectKey, video.body, mime, written);
  let thumbKey: string | null = null;
  let placeholder = NO_PLACEHOLDER_YET;
  if (thumbnail === "not sent") {
    const output = await storedFile(deps.bucket, objectKey);
    const frame = await deps.media
      .call({ operation: "videoThumbnail", format, width: THUMB_WIDTH }, output.body, output.size)
      .catch(noFrame);
    if (frame) {
      thumbKey = newObjectKey(upload.id, "webp");
      await putNewFile(deps.bucket, thumbKey, frame.body, "image/webp", written);
      // The frame came as a stream, now stored: read back, a few KiB.
      placeholder = await placeholderFromStored(deps.bucket, upload.id, thumbKey);
    }
  } else if (thumbnail?.length) {
    thumbKey = newObjectKey(upload.id, "webp");
    await putNewFile(deps.bucket, thumbKey, thumbnail, "image/webp", written);
    placeholder = await placeholderFromWebp(upload.id, thumbnail);
  }
  const { width, height, duration } = video;
  const file = { objectKey, mime, size: stored.size, etag: stored.httpEtag, width, height, duration };
  return { ...file, thumbKey, ...placeholder };
}

/** A video without a decodable first frame still gets its converted file, just no thumbnail. */
function noFrame(error: unknown): null {
  if (error instanceof MediaServiceError && error.permanent) return null;
  throw error;
}

/**
 * The files a job writes for its upload. An image's header is read here, with the job's other
 * reads of the store, and handed down as bytes: the image's work is planned from plain values,
 * and nothing below reads a header of its own. A video's conversion reports its progress to `watch`.
 */
export async function processFile(
  deps: MediaDeps,
  upload: UploadRow,
  written: string[],
  watch?: ProgressWatch,
): Promise<ProcessedFile> {
  if (upload.type === "video") return processVideo(deps, upload, written, watch);
  return processImage(deps, upload, await storedHead(deps.bucket, upload.objectKey, HEADER_LIMIT), written);
}

/** A stored file's first bytes and its size (storedHead). */
type FileHead = Awaited<ReturnType<typeof storedHead>>;

/**
 * An image as WebP when its format calls for it (webpPlan), and its thumbnail, made of the file the
 * upload ends with. The format the upload was sniffed as is settled first: every path needs it.
 * Each render is handed the description of the file it works on: the upload's from `head`, a
 * converted file's from its own first bytes.
 */
async function processImage(
  deps: MediaDeps,
  upload: UploadRow,
  head: FileHead,
  written: string[],
): Promise<ProcessedFile> {
  const format = sniffedFormat(upload, isImageFormat);
  const image = describeImage(head.bytes, head.size);
  const plan = webpPlan(upload, image);
  let file: Omit<ProcessedFile, "thumbKey" | "placeholder" | "color"> = upload;
  let fileFormat: ImageFormat = format;
  let fileImage = image;
  if (plan) {
    const source = { key: upload.objectKey, format };
    const output = await renderImage(deps, source, { kind: "webp", quality: plan.quality }, image);
    const objectKey = newObjectKey(upload.id, "webp");
    const stored = await putNewFile(deps.bucket, objectKey, output.body, "image/webp", written);
    if (plan.onlyIfSmaller && stored.size > upload.size * (1 - OPTIMISE_MIN_SAVING)) {
      await deps.bucket.delete(objectKey);
      written.splice(written.indexOf(objectKey), 1);
    } else {
      const [width, height] = [output.width ?? upload.width, output.height ?? upload.height];
      file = { objectKey, mime: "image/webp", size: stored.size, etag: stored.httpEtag, width, height, duration: null };
      fileFormat = "webp";
      const converted = await storedHead(deps.bucket, objectKey, HEADER_LIMIT);
      fileImage = describeImage(converted.bytes, converted.size);
    }
  }
  const thumbJob = { kind: "thumbnail", width: THUMB_WIDTH } as const;
  const thumb = await renderImage(deps, { key: file.objectKey, format: fileFormat }, thumbJob, fileImage);
  const thumbKey = newObjectKey(upload.id, "webp");
  await putNewFile(deps.bucket, thumbKey, thumb.body, "image/webp", written);
  // Of the pixels the Worker just encoded, else of the service's thumbnail read back (a few KiB).
  const placeholder = thumb.pixels
    ? placeholderFromPixels(upload.id, thumb.pixels)
    : await placeholderFromStored(deps.bucket, upload.id, thumbKey);
  const { objectKey, mime, size, etag, width, height, duration } = file;
  return { objectKey, mime, size, etag, width, height, thumbKey, duration, ...placeholder };
}
