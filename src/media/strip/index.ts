import type { Format } from "../sniff";
import { GifStripper } from "./gif";
import { JpegStripper } from "./jpeg";
import { Mp4Stripper } from "./mp4";
import { PngStripper } from "./png";
import type { Stripper } from "./stripper";
import { WebpStripper } from "./webp";

export type { Stripper } from "./stripper";

/**
 * The lossless metadata remover for a format, applied while the upload streams in, so that no
 * stored byte carries location data. MP4-family videos are served as uploaded until the media
 * job remuxes them, so their metadata boxes are blanked here. Null where the file is not
 * rewritten this way: BMP carries no metadata; AVIF, HEIC, HEIF and TIFF are not served before
 * their conversion; the other video containers keep their tags until their remux.
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
    case "mp4":
    case "mov":
    case "m4v":
    case "3gp":
      return new Mp4Stripper(format);
    default:
      return null;
  }
}
