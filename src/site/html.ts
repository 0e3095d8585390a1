import { html, raw } from "hono/html";
import { NO_STORE } from "../http/cache-control";

/**
 * Markup built with `html`: every value it interpolates was escaped (unless it is itself
 * markup), so titles, descriptions, ids and URLs can go in as they are.
 */
export type Markup = ReturnType<typeof html>;

export const NOINDEX = html`<meta name="robots" content="noindex">`;

/**
 * The site's one design, inline in every page (no request, and the pages' CSP allows inline
 * styles): colour, type and spacing as custom properties, light and dark after the reader's
 * `prefers-color-scheme`, styled controls with a visible focus ring, and the header. Each page
 * adds only its own rules.
 */
export const DESIGN = `
:root{color-scheme:light dark;--bg:#fbfaf8;--fg:#1d1b19;--muted:#5a5550;--surface:#efece8;--line:#d5d0ca;
--accent:#2952c4;--accent-fg:#fff;--focus:#2952c4;--danger:#b3261e;--radius:10px;--gap:.75rem;
--font:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
@media (prefers-color-scheme:dark){:root{--bg:#151413;--fg:#ecebe8;--muted:#aaa49d;--surface:#242220;
--line:#3d3a37;--accent:#92b1ff;--accent-fg:#0c1222;--focus:#92b1ff;--danger:#ff8b7f}}
body{font-family:var(--font);line-height:1.5;background:var(--bg);color:var(--fg);max-width:1100px;
margin:0 auto;padding:0 1rem 3rem}
a{color:var(--accent)}h1{font-size:1.6rem;line-height:1.2;margin:1rem 0}h2{font-size:1.2rem;margin:1.5rem 0 .5rem}
header.site{display:flex;gap:.5rem 1.5rem;align-items:center;flex-wrap:wrap;padding:.75rem 0;
border-bottom:1px solid var(--line)}
header.site .brand{font-weight:700;color:var(--fg);text-decoration:none}
header.site nav{display:flex;gap:.25rem 1rem;flex-wrap:wrap}
header.site nav a{color:var(--muted);text-decoration:none;padding:.25rem 0;border-bottom:2px solid transparent}
header.site nav a:hover,header.site nav a[aria-current=page]{color:var(--fg);border-color:var(--accent)}
header.site form{margin-left:auto}
img,video{max-width:100%;height:auto;display:block;margin:1rem 0}
button{font:inherit;padding:.45rem .9rem;border-radius:var(--radius);border:1px solid var(--accent);
background:var(--accent);color:var(--accent-fg);cursor:pointer}
button[type=button],header.site button{background:transparent;color:var(--accent)}
button:disabled{opacity:.6;cursor:progress}
input,select,textarea{font:inherit;color:inherit;background:var(--bg);border:1px solid var(--line);
border-radius:calc(var(--radius) * .6);padding:.4rem .55rem;max-width:100%;box-sizing:border-box}
input[type=checkbox]{accent-color:var(--accent)}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}label.check{font-weight:400}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.4rem;border-bottom:1px solid var(--line)}
.share{margin:.5rem 0}.share span{display:flex;gap:.5rem}.share input{flex:1;min-width:0}
.problem{color:var(--danger);font-weight:600}.problem:empty{display:none}
nav.pages{display:flex;gap:1rem;justify-content:space-between;margin:1rem 0}`;

/** The site's header: its name, and the ways around it (the dashboard's pages add their own). */
export const SITE_HEADER: Markup = html`<header class="site"><a class="brand" href="/gallery">Image host</a>\
<nav aria-label="Site"><a href="/gallery">Gallery</a><a href="/gallery/albums">Albums</a><a href="/upload">Upload</a>\
<a href="/app">Dashboard</a></nav></header>`;

/**
 * A complete, self-contained HTML page; `title` is plain text. `header: null` leaves it out (the
 * embed). The styles are the service's own constants, put in as they are: escaped, a quote in
 * them (`content:""`, a font's name) would be an entity, which CSS does not read.
 */
export const page = (options: {
  title: string;
  head?: Markup;
  body: Markup;
  style?: string;
  header?: Markup | null;
}): Markup => html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title}</title>
${options.head ?? ""}
<style>${raw(DESIGN)}
${raw(options.style ?? "")}
</style>
</head>
<body>
${options.header === undefined ? SITE_HEADER : (options.header ?? "")}
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
