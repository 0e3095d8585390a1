import { unrestricted } from "../model/policy";
import { variantUrl } from "../uploads/public-urls";
import type { UploadRow } from "../model/schema";
import { srcsetOf, variantLadder } from "../uploads/variants/ladder";
import { widthsFor } from "../uploads/variants/options";
import { servedWhole } from "../uploads/variants/plan";

/**
 * How pages and previews show an image through its variants (src/uploads/variants): a srcset of
 * ladder widths, each served in the best encoding the browser accepts, so a phone loads a few
 * hundred pixels of AVIF rather than the camera's file.
 */

type Shown = Pick<UploadRow, "type" | "mime" | "animated" | "width" | "height" | "passwordHash" | "maxViews">;

/**
 * A still image anyone may see, of known size: a locked or view-limited upload has no variants,
 * and an animated image (every GIF) is always served whole (src/uploads/variants/plan.ts).
 */
const hasVariants = (row: Shown): row is Shown & { width: number; height: number } =>
  row.type === "image" && !servedWhole(row) && unrestricted.of(row) && !!row.width && !!row.height;

/** The page's column: the body's 960 px less its 1rem of padding each side (src/site/html.ts). */
const PAGE_COLUMN_PX = 928;

/** The srcset and sizes of an image shown full width on its page (or, `fill`, across the viewport). */
export function pageImageSources(row: Shown, src: string, fill = false) {
  if (!hasVariants(row)) return null;
  const shown = Math.min(row.width, PAGE_COLUMN_PX);
  const sizes = fill ? "100vw" : `(max-width: ${shown + 32}px) calc(100vw - 2rem), ${shown}px`;
  return { srcset: srcsetOf(src, row.width), sizes };
}

/**
 * A gallery tile: its thumbnail, and for screens of more pixels per CSS pixel the ladder's next
 * widths. A tile is a column of a grid at least 160 px wide, half a phone's screen at most.
 */
export function tileImageSources(row: Shown, src: string, thumb: { url: string; width: number }) {
  if (!hasVariants(row)) return null;
  const wider = widthsFor(row.width).filter((w) => w > thumb.width && w <= 640);
  if (!wider.length) return null;
  return {
    srcset: `${thumb.url} ${thumb.width}w, ${srcsetOf(src, row.width, wider)}`,
    sizes: "(max-width: 560px) calc(50vw - 1.5rem), 240px",
  };
}

/** What link previews ask for: Open Graph recommends 1200 px wide. */
const PREVIEW_WIDTH = 1200;

/**
 * The image link previews show: a 1200 px variant where the image is wider, in its own format
 * (crawlers name few formats in Accept, and og:image:type must say which it is), else the file.
 */
export function previewImage(row: Shown, src: string) {
  if (!hasVariants(row) || row.width <= PREVIEW_WIDTH) return { url: src, width: row.width, height: row.height };
  const height = Math.max(1, Math.round((row.height * PREVIEW_WIDTH) / row.width));
  return { url: variantUrl(src, PREVIEW_WIDTH, "original"), width: PREVIEW_WIDTH, height };
}

/**
 * The widest variant that fits oEmbed's maxwidth and maxheight, or null: the image itself and
 * its thumbnail are the caller's to try.
 */
export function fittingVariant(row: Shown, src: string, maxWidth: number | null, maxHeight: number | null) {
  if (!hasVariants(row)) return null;
  const { width, height } = row;
  const fits = variantLadder(src, width)
    .filter((v) => v.width < width)
    .map((v) => ({ url: v.url, width: v.width, height: Math.max(1, Math.round((height * v.width) / width)) }))
    .filter((v) => (!maxWidth || v.width <= maxWidth) && (!maxHeight || v.height <= maxHeight));
  return fits.at(-1) ?? null;
}
