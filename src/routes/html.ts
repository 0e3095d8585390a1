import { NO_STORE } from "../http/cache-control";

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (ch) => ESCAPES[ch]!);

/** A complete, self-contained HTML page; every interpolated value must already be escaped. */
export function page(options: { title: string; head?: string; body: string }): string {
  return `<!doctype html>
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
}

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
