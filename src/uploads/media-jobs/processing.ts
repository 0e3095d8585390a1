import { MediaServiceError } from "../../media/service";
import { describeStoredImage, renderImage } from "../../media/image/render";
import { formatOfMime, type Format } from "../../media/sniff";
import { newObjectKey } from "../../storage/keys";
import type { UploadRow } from "../../storage/schema";
import type { ProcessedFile } from "../../storage/uploads";
import type { ProcessDeps } from "./jobs";
import { OPTIMISE_MIN_SAVING, THUMB_WIDTH, webpPlan } from "./webp-policy";

/**
 * The files a media job makes, each written under a new key and listed in `written` as it is
 * (so that the job can remove them if it fails before the upload points at them).
 */
async function put(deps: ProcessDeps, key: string, body: ReadableStream | Uint8Array | null, contentType: string, written: string[]) {
  written.push(key);
  return deps.bucket.put(key, body, { httpMetadata: { contentType } });
}

/** The format the upload was sniffed as, which the media service is told to read the file as. */
function sniffedFormat(upload: Pick<UploadRow, "id" | "mime">): Format {
  const format = formatOfMime(upload.mime);
  if (!format) throw new Error(`upload ${upload.id} has a type no format gives: ${upload.mime}`);
  return format;
}

/** `operation` on a stored file, which the service reads as `format` and nothing else. */
async function callOnObject(deps: ProcessDeps, key: string, format: Format, operation: string) {
  const source = await deps.bucket.get(key);
  if (!source) throw new Error(`stored file ${key} is missing`);
  const url = new URL(operation, "http://media");
  url.searchParams.set("format", format);
  return deps.media.call(`${url.pathname}${url.search}`, source.body, source.size);
}

export async function processVideo(deps: ProcessDeps, upload: UploadRow, written: string[]): Promise<ProcessedFile> {
  const keep = upload.mime === "video/mp4" || upload.mime === "video/webm";
  const format = upload.mime === "video/webm" ? "webm" : "mp4";
  // Stripping keeps the container: the input's format is the output's. The thumbnail of the
  // output comes in front of it, in the same answer.
  const operation = `${keep ? "/video/strip" : "/video/mp4"}?thumbnail=${THUMB_WIDTH}`;
  const response = await callOnObject(deps, upload.objectKey, sniffedFormat(upload), operation);
  const width = Number(response.headers.get("X-Media-Width")) || null;
  const height = Number(response.headers.get("X-Media-Height")) || null;
  const mime = `video/${format}`;
  const objectKey = newObjectKey(upload.id, format);
  const { thumbnail, video } = await withThumbnailInFront(response);
  const stored = await put(deps, objectKey, video, mime, written);
  let thumbKey: string | null = null;
  if (thumbnail?.length) {
    thumbKey = newObjectKey(upload.id, "webp");
    await put(deps, thumbKey, thumbnail, "image/webp", written);
  } else if (thumbnail === null) {
    // A service without thumbnails in front (an older version during a deploy): asked apart.
    thumbKey = await videoThumbnail(deps, upload.id, objectKey, format, written);
  }
  return { objectKey, mime, size: stored.size, etag: stored.httpEtag, width, height, thumbKey };
}

/** Far more than a 280 px WebP takes: a larger claim is a broken answer, not a thumbnail. */
const MAX_THUMBNAIL_BYTES = 4 * 1024 * 1024;

/**
 * A video answer split into the thumbnail in front of it (X-Media-Thumbnail-Length bytes, read
 * into memory: it is small) and the video, a stream of its known length. `thumbnail` is null when
 * the answer has no thumbnail in front.
 */
async function withThumbnailInFront(response: Response): Promise<{ thumbnail: Uint8Array | null; video: ReadableStream }> {
  const declared = response.headers.get("X-Media-Thumbnail-Length");
  if (declared === null) return { thumbnail: null, video: response.body! };
  const thumbLength = /^\d{1,8}$/.test(declared) ? Number(declared) : NaN;
  const total = Number(response.headers.get("Content-Length"));
  if (!(thumbLength <= MAX_THUMBNAIL_BYTES && thumbLength <= total)) {
    await response.body?.cancel();
    throw new MediaServiceError(0, `media service answered a thumbnail of ${declared} bytes in front of ${total}`);
  }
  const reader = response.body!.getReader();
  const thumbnail = new Uint8Array(thumbLength);
  let filled = 0;
  let leftover: Uint8Array | null = null;
  while (filled < thumbLength) {
    const { done, value } = await reader.read();
    if (done) throw new MediaServiceError(0, "media service answer ended inside its thumbnail");
    const take = Math.min(value.length, thumbLength - filled);
    thumbnail.set(value.subarray(0, take), filled);
    filled += take;
    if (take < value.length) leftover = value.subarray(take);
  }
  // The answer's body is a sized stream already, which workerd cannot pipe into another: the
  // rest is moved chunk by chunk (the chunks themselves are not copied).
  const video = new FixedLengthStream(total - thumbLength);
  const writer = video.writable.getWriter();
  (async () => {
    if (leftover) await writer.write(leftover);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      await writer.write(value);
    }
    await writer.close();
  })().catch(async (error) => {
    // Errors the video stream, which fails its put.
    await writer.abort(error).catch(() => {});
    await reader.cancel(error).catch(() => {});
  });
  return { thumbnail, video: video.readable };
}

export async function processImage(deps: ProcessDeps, upload: UploadRow, written: string[]): Promise<ProcessedFile> {
  const file = (await convertToWebp(deps, upload, written)) ?? {
    objectKey: upload.objectKey,
    mime: upload.mime,
    size: upload.size,
    etag: upload.etag,
    width: upload.width,
    height: upload.height,
  };
  const thumb = await renderImage(deps, { key: file.objectKey, format: sniffedFormat({ id: upload.id, mime: file.mime }) }, { kind: "thumbnail", width: THUMB_WIDTH });
  const thumbKey = newObjectKey(upload.id, "webp");
  await put(deps, thumbKey, thumb.body, "image/webp", written);
  return { ...file, thumbKey };
}

/** The image as WebP when its format calls for it; null when the original stays. */
async function convertToWebp(deps: ProcessDeps, upload: UploadRow, written: string[]) {
  const image = await describeStoredImage(deps.bucket, upload.objectKey);
  const plan = webpPlan(upload, image);
  if (!plan) return null;
  const output = await renderImage(deps, { key: upload.objectKey, format: sniffedFormat(upload) }, { kind: "webp", quality: plan.quality }, image);
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
async function videoThumbnail(deps: ProcessDeps, uploadId: string, videoKey: string, format: Format, written: string[]) {
  let response: Response;
  try {
    response = await callOnObject(deps, videoKey, format, `/thumbnail?width=${THUMB_WIDTH}`);
  } catch (error) {
    if (error instanceof MediaServiceError && error.permanent) return null;
    throw error;
  }
  const thumbKey = newObjectKey(uploadId, "webp");
  await put(deps, thumbKey, response.body, "image/webp", written);
  return thumbKey;
}
