import type { Format } from "../sniff";
import { GifStripper } from "./gif";
import { JpegStripper } from "./jpeg";
import { PngStripper } from "./png";
import type { Stripper } from "./stripper";
import { WebpStripper } from "./webp";

export type { Stripper } from "./stripper";

/**
 * The lossless metadata remover for a format, applied while the upload streams in, so that no
 * stored byte carries location data. Null where the file cannot be rewritten this way (BMP
 * carries no metadata; AVIF, HEIC, HEIF and TIFF need conversion; videos are remuxed later).
 */
export function stripperFor(format: Format): Stripper | null {
  switch (format) {
    case "jpeg":
      return new JpegStripper();
    case "png":
      return new PngStripper();
    case "gif":
      return new GifStripper();
    case "webp":
      return new WebpStripper();
    default:
      return null;
  }
}
