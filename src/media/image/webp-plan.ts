import type { SourceImage } from "./budget";
import { CONVERTED_TO_WEBP } from "../../model/policy";
import type { UploadRow } from "../../model/schema";

/** JPG and PNG over this size are optimised to WebP unless keep_original (spec: 1 MB). */
const OPTIMISE_OVER_BYTES = 1024 * 1024;
/** The optimised WebP replaces the original only when it is at least this much smaller. */
export const OPTIMISE_MIN_SAVING = 0.1;
/** WebP holds at most this many pixels a side: a conversion that must happen is scaled to fit. */
const WEBP_MAX_SIDE = 16383;

type WebpPlan = { quality: number | "lossless"; onlyIfSmaller: boolean } | null;

export function webpPlan(
  upload: Pick<UploadRow, "mime" | "keepOriginal" | "size">,
  image: SourceImage | null,
): WebpPlan {
  if (CONVERTED_TO_WEBP.has(upload.mime)) return { quality: 82, onlyIfSmaller: false };
  // BMP carries no metadata but is uncompressed: the same pixels, losslessly compressed.
  if (upload.mime === "image/bmp") return { quality: "lossless", onlyIfSmaller: false };
  const optimisable = upload.mime === "image/jpeg" || upload.mime === "image/png";
  if (!optimisable || upload.keepOriginal || upload.size <= OPTIMISE_OVER_BYTES) return null;
  // An animated PNG would lose its animation; a wider image than WebP holds, resolution.
  if (image?.animated) return null;
  if (image && Math.max(image.storedWidth, image.storedHeight) > WEBP_MAX_SIDE) return null;
  return { quality: 82, onlyIfSmaller: true };
}
