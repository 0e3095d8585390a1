import { html } from "hono/html";
import { NO_STORE } from "../http/cache-control";

/**
 * Markup built with `html`: every value it interpolates was escaped (unless it is itself
 * markup), so titles, descriptions, ids and URLs can go in as they are.
 */
export type Markup = ReturnType<typeof html>;

export const NOINDEX = html`<meta name="robots" content="noindex">`;

/** A complete, self-contained HTML page; `title` is plain text. */
export const page = (options: { title: string; head?: Markup; body: Markup }): Markup => html`<!doctype html>
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
</style>
</head>
<body>
${options.body}
</body>
</html>`;

/**
 * Pages carry no scripts and load nothing but our own media. No cache keeps them: a page shows
 * the upload as it is now (deleted, locked, used up) and may carry a signed link.
 */
export const PAGE_HEADERS = {
  "Content-Type": "text/html; charset=utf-8",
  "Cache-Control": NO_STORE,
  "Content-Security-Policy": "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; form-action 'self'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
};
