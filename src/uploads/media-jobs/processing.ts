import {
  isImageFormat,
  isVideoFormat,
  type MediaCall,
  type VideoCall,
  type VideoFormat,
} from "../../../container/src/contract";
import { describeStoredImage, renderImage } from "../../media/image/render";
import { MediaServiceError, type MediaFile, type MediaService } from "../../media/service";
import { formatOfMime } from "../../media/sniff";
import { newObjectKey } from "../../storage/keys";
import { storedFile } from "../../storage/stored-file";
import type { UploadRow } from "../../model/schema";
import type { ProcessedFile } from "../../storage/uploads";
import type { Stores } from "../../storage/stores";
import { THUMB_WIDTH } from "../../model/spec-limits";
import { OPTIMISE_MIN_SAVING, webpPlan } from "./webp-plan";

/** The stores, and the media service that does the work too large for the Worker. */
export interface MediaDeps extends Stores {
  media: MediaService;
}

/**
 * The files a media job makes, each written under a new key and listed in `written` as it is
 * (so that the job can remove them if it fails before the upload points at them).
 */
async function put(
  deps: MediaDeps,
  key: string,
  body: ReadableStream | Uint8Array | null,
  contentType: string,
  written: string[],
) {
  written.push(key);
  return deps.bucket.put(key, body, { httpMetadata: { contentType } });
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

/** `call` on a stored file, which the service reads as the call's format and nothing else. */
async function callOnObject<C extends MediaCall>(deps: MediaDeps, key: string, call: C) {
  const source = await storedFile(deps.bucket, key);
  return deps.media.call(call, source.body, source.size);
}

export async function processVideo(deps: MediaDeps, upload: UploadRow, written: string[]): Promise<ProcessedFile> {
  const keep = upload.mime === "video/mp4" || upload.mime === "video/webm";
  const format = upload.mime === "video/webm" ? "webm" : "mp4";
  // Stripping keeps the container: the input's format is the output's. The thumbnail of the
  // output comes with it, in the same answer.
  const call: VideoCall = keep
    ? { operation: "stripVideo", format, thumbnailWidth: THUMB_WIDTH }
    : { operation: "videoToMp4", format: sniffedFormat(upload, isVideoFormat), thumbnailWidth: THUMB_WIDTH };
  const { video, thumbnail } = await callOnObject(deps, upload.objectKey, call);
  const mime = `video/${format}`;
  const objectKey = newObjectKey(upload.id, format);
  const stored = await put(deps, objectKey, video.body, mime, written);
  let thumbKey: string | null = null;
  if (thumbnail === "not sent") {
    thumbKey = await videoThumbnail(deps, upload.id, objectKey, format, written);
  } else if (thumbnail?.length) {
    thumbKey = newObjectKey(upload.id, "webp");
    await put(deps, thumbKey, thumbnail, "image/webp", written);
  }
  const { width, height } = video;
  return { objectKey, mime, size: stored.size, etag: stored.httpEtag, width, height, thumbKey };
}

export async function processImage(deps: MediaDeps, upload: UploadRow, written: string[]): Promise<ProcessedFile> {
  const file = (await convertToWebp(deps, upload, written)) ?? {
    objectKey: upload.objectKey,
    mime: upload.mime,
    size: upload.size,
    etag: upload.etag,
    width: upload.width,
    height: upload.height,
  };
  const source = { key: file.objectKey, format: sniffedFormat({ id: upload.id, mime: file.mime }, isImageFormat) };
  const thumb = await renderImage(deps, source, { kind: "thumbnail", width: THUMB_WIDTH });
  const thumbKey = newObjectKey(upload.id, "webp");
  await put(deps, thumbKey, thumb.body, "image/webp", written);
  return { ...file, thumbKey };
}

/** The image as WebP when its format calls for it; null when the original stays. */
async function convertToWebp(deps: MediaDeps, upload: UploadRow, written: string[]) {
  const image = await describeStoredImage(deps.bucket, upload.objectKey);
  const plan = webpPlan(upload, image);
  if (!plan) return null;
  const source = { key: upload.objectKey, format: sniffedFormat(upload, isImageFormat) };
  const output = await renderImage(deps, source, { kind: "webp", quality: plan.quality }, image);
  const objectKey = newObjectKey(upload.id, "webp");
  const stored = await put(deps, objectKey, output.body, "image/webp", written);
  if (plan.onlyIfSmaller && stored.size > upload.size * (1 - OPTIMISE_MIN_SAVING)) {
    await deps.bucket.delete(objectKey);
    written.splice(written.indexOf(objectKey), 1);
    return null;
  }
  return {
    objectKey,
    mime: "image/webp",
    size: stored.size,
    etag: stored.httpEtag,
    width: output.width ?? upload.width,
    height: output.height ?? upload.height,
  };
}

/** A video without a decodable first frame still gets its converted file, just no thumbnail. */
async function videoThumbnail(
  deps: MediaDeps,
  uploadId: string,
  videoKey: string,
  format: VideoFormat,
  written: string[],
) {
  let thumbnail: MediaFile;
  try {
    thumbnail = await callOnObject(deps, videoKey, { operation: "videoThumbnail", format, width: THUMB_WIDTH });
  } catch (error) {
    if (error instanceof MediaServiceError && error.permanent) return null;
    throw error;
  }
  const thumbKey = newObjectKey(uploadId, "webp");
  await put(deps, thumbKey, thumbnail.body, "image/webp", written);
  return thumbKey;
}
