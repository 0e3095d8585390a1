import { html } from "hono/html";
import { NO_STORE } from "../http/cache-control";

/**
 * Markup built with `html`: every value it interpolates was escaped (unless it is itself
 * markup), so titles, descriptions, ids and URLs can go in as they are.
 */
export type Markup = ReturnType<typeof html>;

export const NOINDEX = html`<meta name="robots" content="noindex">`;

/** A complete, self-contained HTML page; `title` is plain text. */
export const page = (options: {
  title: string;
  head?: Markup;
  body: Markup;
  style?: string;
}): Markup => html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title}</title>
${options.head ?? ""}
<style>
body{font-family:system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#222}
img,video{max-width:100%;height:auto;display:block;margin:1rem 0}
button{font:inherit;padding:.5rem 1rem}
.share{margin:.5rem 0}.share label{display:block;font-weight:600}.share span{display:flex;gap:.5rem}
.share input{flex:1;min-width:0;font:inherit;padding:.4rem}
a{color:#0645ad}
${options.style ?? ""}
</style>
</head>
<body>
${options.body}
</body>
</html>`;

/**
 * Pages load nothing but our own media and our own script (no inline script), and the `data:`
 * images their inline styles paint placeholders with (placeholder-paint.ts). No cache keeps
 * them: a page shows the upload as it is now (deleted, locked, used up) and may carry a signed
 * link. No other site may frame them, except the embed page (EMBED_HEADERS).
 */
export const PAGE_HEADERS = {
  "Content-Type": "text/html; charset=utf-8",
  "Cache-Control": NO_STORE,
  "Content-Security-Policy":
    "default-src 'none'; img-src 'self' data:; media-src 'self'; script-src 'self'; " +
    "style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
};

/**
 * A video page whose upload has an HLS ladder: hls.js fetches playlists and segments (connect-src)
 * and plays them through a MediaSource's blob: URL (media-src); it runs without a worker.
 */
export const VIDEO_PAGE_HEADERS = {
  ...PAGE_HEADERS,
  "Content-Security-Policy":
    "default-src 'none'; img-src 'self' data:; media-src 'self' blob:; connect-src 'self'; script-src 'self'; " +
    "style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
};

/** The uploader talks to the API (connect-src) and shows the thumbnails it gets back. */
export const UPLOADER_HEADERS = {
  ...PAGE_HEADERS,
  "Content-Security-Policy":
    "default-src 'none'; img-src 'self'; script-src 'self'; connect-src 'self'; " +
    "style-src 'unsafe-inline'; form-action 'none'; frame-ancestors 'none'",
};

/** The player page other sites put in an iframe (oEmbed, the HTML embed code). */
export const EMBED_HEADERS = {
  "Content-Type": "text/html; charset=utf-8",
  "Cache-Control": NO_STORE,
  "Content-Security-Policy":
    "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; frame-ancestors *",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
};
