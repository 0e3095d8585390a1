import { html } from "hono/html";
import { rgbaToDataURL, thumbHashToRGBA } from "thumbhash";
import { shrinkByFactor } from "../media/image/pixels";
import type { UploadRow } from "../model/schema";

/**
 * An upload's placeholder painted behind its image until the image loads: its colour first, then
 * its ThumbHash drawn as a PNG data URL, both an inline style (the pages' CSP allows inline styles,
 * and `data:` images), so nothing waits on a request or a script. page.js takes it away once the
 * image has loaded, so that none shows through the image's transparent parts.
 */

/**
 * The ThumbHash is drawn at most 32 px a side (4 KiB as an uncompressed PNG's data URL); averaged
 * down to 16 it is a quarter of that, and scaled up by the browser it is as smooth a blur.
 */
const DRAWN_SIDE = 16;

/** The PNG data URL of a ThumbHash (base64, as stored), at most DRAWN_SIDE px a side. */
export function placeholderDataUrl(placeholder: string): string {
  const drawn = thumbHashToRGBA(Uint8Array.from(atob(placeholder), (c) => c.charCodeAt(0)));
  const factor = Math.ceil(Math.max(drawn.w, drawn.h) / DRAWN_SIDE);
  const small = shrinkByFactor({ data: new Uint8ClampedArray(drawn.rgba), width: drawn.w, height: drawn.h }, factor);
  return rgbaToDataURL(small.width, small.height, small.data);
}

/** The attributes that paint it (none without a placeholder), for an `<img>` or a `<video>`. */
export function placeholderPaint(row: Pick<UploadRow, "placeholder" | "color">) {
  if (!row.placeholder) return "";
  const color = row.color ?? "transparent";
  const url = placeholderDataUrl(row.placeholder);
  return html` data-placeholder style="background:${color} url(${url}) 0 0/100% 100% no-repeat"`;
}
