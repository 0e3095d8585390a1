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
  // Stripping keeps the container: the input's format is the output's.
  const response = await callOnObject(deps, upload.objectKey, sniffedFormat(upload), keep ? "/video/strip" : "/video/mp4");
  const width = Number(response.headers.get("X-Media-Width")) || null;
  const height = Number(response.headers.get("X-Media-Height")) || null;
  const mime = `video/${format}`;
  const objectKey = newObjectKey(upload.id, format);
  const stored = await put(deps, objectKey, response.body, mime, written);

  return { objectKey, mime, size: stored.size, etag: stored.httpEtag, width, height, thumbKey: await videoThumbnail(deps, upload.id, objectKey, format, written) };
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
