import { variantUrl } from "../public-urls";
import { widthsFor } from "./options";

/**
 * An image's variants as a page or an agent names them: each ladder width it can be shown at
 * (widthsFor, or the few a caller picks of them), with its URL.
 */
export const variantLadder = (src: string, imageWidth: number, widths = widthsFor(imageWidth)) =>
  widths.map((width) => ({ width, url: variantUrl(src, width) }));

/** The ladder as `srcset` candidates: each width, the widest at the image's own width. */
export const srcsetOf = (src: string, imageWidth: number, widths = widthsFor(imageWidth)) =>
  variantLadder(src, imageWidth, widths)
    .map((variant) => `${variant.url} ${Math.min(variant.width, imageWidth)}w`)
    .join(", ");
