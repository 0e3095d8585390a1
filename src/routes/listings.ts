import { Hono, type Context } from "hono";
import { html } from "hono/html";
import type { AppEnv } from "../env";
import { badRequest } from "../errors";
import { publicOrigin } from "../http/request-info";
import { NO_STORE } from "../http/cache-control";
import type { UploadRow } from "../storage/schema";
import { countPublicUploads, publicUploads } from "../storage/uploads";
import { isoTimestamp } from "../time";
import { uploadLinks } from "../uploads/public-urls";
import { page, PAGE_HEADERS } from "./html";
import { methodNotAllowed } from "./method-not-allowed";
import { mayPreview, thumbnailSize, uploadTitle } from "./site/previews";

/**
 * The site's listings of public uploads (the spec's "listed on the site and indexable"): the
 * gallery, the sitemap and an Atom feed. Unlisted and private uploads are in none of them; a
 * locked or view-limited public upload is listed by its title, never by its file.
 */
export const GALLERY_PAGE_SIZE = 48;
/** The sitemap protocol's limit for one file. */
const SITEMAP_MAX_URLS = 50_000;
const FEED_ENTRIES = 50;


function galleryPage(c: Context<AppEnv>): number {
  const raw = c.req.query("page");
  if (raw === undefined) return 1;
  if (!/^[1-9]\d{0,6}$/.test(raw)) throw badRequest("page must be a whole number of at least 1.");
  return Number(raw);
}

function tile(origin: string, row: UploadRow) {
  const links = uploadLinks(origin, row);
  const size = thumbnailSize(row);
  const picture =
    mayPreview(row) && links.thumb
      ? html`<img src="${links.thumb}" alt="${uploadTitle(row)}" loading="lazy"${size ? html` width="${size.width}" height="${size.height}"` : ""}>`
      : html`<span class="nothumb">${row.passwordHash ? "Password-protected" : row.maxViews !== null ? "Limited views" : "No preview yet"}</span>`;
  return html`<li><a href="${links.direct}">${picture}<span class="caption">${uploadTitle(row)}</span></a></li>`;
}

const GALLERY_STYLE =
  ".grid{list-style:none;padding:0;display:grid;grid-template-columns:repeat(auto-fill,minmax(160px,1fr));gap:1rem}" +
  ".grid a{display:block;text-decoration:none;color:inherit}.grid img{width:100%;height:auto;margin:0;border-radius:4px;background:#eee}" +
  ".nothumb{display:flex;align-items:center;justify-content:center;aspect-ratio:4/3;background:#eee;color:#444}" +
  ".caption{display:block;margin-top:.25rem;overflow-wrap:anywhere}nav{display:flex;gap:1rem;justify-content:space-between}";

export const listings = new Hono<AppEnv>()
  .get("/gallery", async (c) => {
    const number = galleryPage(c);
    const now = c.var.now();
    const [rows, total] = await Promise.all([
      publicUploads(c.var.db, now, GALLERY_PAGE_SIZE, (number - 1) * GALLERY_PAGE_SIZE),
      countPublicUploads(c.var.db, now),
    ]);
    const last = Math.max(1, Math.ceil(total / GALLERY_PAGE_SIZE));
    const origin = publicOrigin(c);
    const previous = number > 1 ? html`<a rel="prev" href="/gallery?page=${Math.min(number - 1, last)}">Newer</a>` : html`<span></span>`;
    const next = number < last ? html`<a rel="next" href="/gallery?page=${number + 1}">Older</a>` : html`<span></span>`;
    const head = html`<link rel="alternate" type="application/atom+xml" title="Newest public uploads" href="/feed.atom">
${number > 1 ? html`<link rel="prev" href="/gallery?page=${Math.min(number - 1, last)}">` : ""}${number < last ? html`<link rel="next" href="/gallery?page=${number + 1}">` : ""}`;
    const body = html`<main><h1>Public uploads</h1>
<p>Page ${number} of ${last}, newest first.</p>
${rows.length ? html`<ul class="grid">${rows.map((row) => tile(origin, row))}</ul>` : html`<p>Nothing here yet.</p>`}
<nav aria-label="Pages">${previous}${next}</nav></main>`;
    return c.html(page({ title: number > 1 ? `Public uploads, page ${number}` : "Public uploads", head, body, style: GALLERY_STYLE }), 200, PAGE_HEADERS);
  })
  .all("/gallery", methodNotAllowed("GET"))
  .get("/sitemap.xml", async (c) => {
    const origin = publicOrigin(c);
    const rows = await publicUploads(c.var.db, c.var.now(), SITEMAP_MAX_URLS - 1);
    const urls = rows.map((row) => html`<url><loc>${uploadLinks(origin, row).direct}</loc><lastmod>${isoTimestamp(row.updatedAt)}</lastmod></url>\n`);
    const xml = html`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>${origin}/gallery</loc></url>
${urls}</urlset>
`;
    return c.body(String(await xml), 200, { "Content-Type": "application/xml; charset=utf-8", "Cache-Control": NO_STORE });
  })
  .all("/sitemap.xml", methodNotAllowed("GET"))
  .get("/feed.atom", async (c) => {
    const origin = publicOrigin(c);
    const rows = await publicUploads(c.var.db, c.var.now(), FEED_ENTRIES);
    const updated = isoTimestamp(rows[0]?.updatedAt ?? 0);
    const entries = rows.map(async (row) => {
      const links = uploadLinks(origin, row);
      const picture = mayPreview(row) && links.thumb ? html`<p><img src="${links.thumb}" alt="${uploadTitle(row)}"></p>` : "";
      const summary = html`${picture}${row.description ? html`<p>${row.description}</p>` : ""}`;
      return html`<entry>
<id>${links.direct}</id>
<title>${uploadTitle(row)}</title>
<link rel="alternate" type="text/html" href="${links.direct}"/>
<published>${isoTimestamp(row.createdAt)}</published>
<updated>${isoTimestamp(row.updatedAt)}</updated>
<content type="html">${String(await summary)}</content>
</entry>
`;
    });
    const xml = html`<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
<id>${origin}/feed.atom</id>
<title>Newest public uploads</title>
<link rel="self" type="application/atom+xml" href="${origin}/feed.atom"/>
<link rel="alternate" type="text/html" href="${origin}/gallery"/>
<updated>${updated}</updated>
<author><name>${new URL(origin).host}</name></author>
${await Promise.all(entries)}</feed>
`;
    return c.body(String(await xml), 200, { "Content-Type": "application/atom+xml; charset=utf-8", "Cache-Control": NO_STORE });
  })
  .all("/feed.atom", methodNotAllowed("GET"))
  .get("/robots.txt", (c) => c.text(`User-agent: *\nDisallow: /api/\nDisallow: /d/\nSitemap: ${publicOrigin(c)}/sitemap.xml\n`, 200, { "Cache-Control": "public, max-age=3600" }));
