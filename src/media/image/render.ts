import type { ImageCall, ImageFormat } from "../../../container/src/contract";
import { storedFile, storedHead } from "../../storage/stored-file";
import { readImageHeader } from "../image-header";
import { HEADER_LIMIT, isAnimated } from "../image-info";
import type { MediaService } from "../service";
import type { Pixels } from "./codecs";
import { sniff } from "../sniff";
import type { ImageJob, SourceImage } from "./budget";
import { renderInWorker } from "./worker-engine";

/** A rendered image: the Worker's bytes or the media service's stream. */
interface ImageOutput {
  body: ReadableStream | Uint8Array;
  width: number | null;
  height: number | null;
  engine: "worker" | "service";
  /** The Worker's output as pixels too (the service's is only bytes). */
  pixels?: Pixels;
}

interface RenderDeps {
  bucket: R2Bucket;
  media: MediaService;
}

/** What the budget rule needs of a stored image, from its first bytes; null if unreadable. */
export async function describeStoredImage(bucket: R2Bucket, key: string): Promise<SourceImage | null> {
  const head = await storedHead(bucket, key, HEADER_LIMIT);
  return describeImage(head.bytes, head.size);
}

/** The same from the image's first bytes (`head`, up to HEADER_LIMIT of them) and its size. */
export function describeImage(head: Uint8Array, size: number): SourceImage | null {
  const media = sniff(head);
  if (media?.type !== "image") return null;
  const header = readImageHeader(media.format, head, head.length === size);
  if (!("width" in header)) return null;
  const frame = header.jpegFrame;
  // mozjpeg's build here decodes 8-bit grey and colour JPEG only; it exits on CMYK and 12-bit.
  const unsupported =
    frame && (frame.bits !== 8 || (frame.components !== 1 && frame.components !== 3))
      ? `${frame.components}-component ${frame.bits}-bit JPEG`
      : undefined;
  return {
    format: media.format,
    storedWidth: header.storedWidth,
    storedHeight: header.storedHeight,
    orientation: header.orientation,
    animated: isAnimated(media.format, head),
    unsupported,
    bytes: size,
  };
}

/** A stored image and the format it was sniffed as when uploaded. */
interface StoredImage {
  key: string;
  format: ImageFormat;
}

/** The service reads the file as the format named here, and refuses it if its bytes are another. */
function serviceCall(job: ImageJob, format: ImageFormat): ImageCall {
  switch (job.kind) {
    case "thumbnail":
      return { operation: "imageThumbnail", format, width: job.width };
    case "webp":
      return { operation: "imageToWebp", format, quality: job.quality };
    case "variant":
      return { operation: "imageVariant", format, width: job.width, to: job.to };
  }
}

/**
 * Runs image work where it fits: in this Worker when the budget rule says its memory allows
 * (no round trip, no container to wake), otherwise, or if the Worker's codecs fail on the
 * file, on the media service, whose native tools have no such limit. `image` is the file's
 * description (describeImage): the caller read its header, and decided on the job from it.
 */
export async function renderImage(
  deps: RenderDeps,
  { key, format }: StoredImage,
  job: ImageJob,
  image: SourceImage | null,
): Promise<ImageOutput> {
  if (image) {
    try {
      const { plan, result } = await renderInWorker(image, job, async () => {
        const object = await storedFile(deps.bucket, key);
        return new Uint8Array(await object.arrayBuffer());
      });
      if (result) {
        const { bytes: body, width, height, pixels } = result;
        return { body, width, height, engine: "worker", pixels };
      }
      if (plan.where === "service") log(key, job, plan.reason);
    } catch (error) {
      log(key, job, `the Worker's codecs failed: ${String(error)}`);
    }
  }
  const source = await storedFile(deps.bucket, key);
  const { body, width, height } = await deps.media.call(serviceCall(job, format), source.body, source.size);
  return { body, width, height, engine: "service" };
}

function log(key: string, job: ImageJob, reason: string) {
  console.log(JSON.stringify({ image: key, job: job.kind, engine: "service", reason }));
}
