import { Hono, type Context } from "hono";
import { html } from "hono/html";
import { requestStores } from "../deps";
import type { AppEnv } from "../env";
import { badRequest, notFound } from "../errors";
import { fromColoCache } from "../http/colo-cache";
import { publicOrigin } from "../http/request-info";
import { limitListing } from "../http/throttles/network-limits";
import { isoTimestamp } from "../time";
import { feedUploads, galleryPage, sitemapPage, sitemapPages } from "../uploads/listings";
import { locked, unrestricted, viewLimited } from "../model/policy";
import { uploadLinks } from "../uploads/public-urls";
import type { Upload } from "../uploads/upload";
import { page, PAGE_HEADERS } from "./html";
import { methodNotAllowed } from "../http/method-not-allowed";
import { thumbnailSize, visitorText } from "./previews";
import { tileImageSources } from "./responsive-images";
import { xml } from "./xml";

/**
 * The site's listings of public uploads (the spec's "listed on the site and indexable"): the
 * gallery, the sitemap and an Atom feed. Unlisted and private uploads are in none of them; a
 * locked or view-limited public upload is listed as its page shows it without the password
 * (visitorText), never by its file; a used-up one not at all.
 *
 * Anyone may ask for them at any rate, so each answer is kept LISTING_SECONDS in the colo's cache
 * (and as long by browsers), and what the cache cannot answer is throttled per client IP
 * (listingRule). The price: an upload made unlisted or private, locked, used up or deleted can
 * stay in them for up to LISTING_SECONDS (each colo's copy runs out on its own; none can be
 * removed everywhere at once).
 */
const LISTING_SECONDS = 60;

const XML_HEADERS = { "Content-Type": "application/xml; charset=utf-8" };

/**
 * The listing at `path` (with only the query that changes it), from the colo's cache or made
 * afresh if the client may.
 */
function listing(c: Context<AppEnv>, path: string, make: () => Promise<Response>): Promise<Response> {
  return fromColoCache(c, `${publicOrigin(c)}${path}`, LISTING_SECONDS, async () => {
    await limitListing(c);
    return make();
  });
}

function galleryNumber(c: Context<AppEnv>): number {
  const raw = c.req.query("page");
  if (raw === undefined) return 1;
  if (!/^[1-9]\d{0,6}$/.test(raw)) throw badRequest("page must be a whole number of at least 1.");
  return Number(raw);
}

/** What a tile without a thumbnail says instead. */
const noThumbnail = (row: Upload) =>
  locked.of(row) ? "Password-protected" : viewLimited.of(row) ? "Limited views" : "No preview yet";

function tile(origin: string, row: Upload) {
  const links = uploadLinks(origin, row);
  const size = thumbnailSize(row);
  const { title } = visitorText(row);
  const sizeAttributes = size ? html` width="${size.width}" height="${size.height}"` : "";
  const sources = links.thumb && size && tileImageSources(row, links.src, { url: links.thumb, width: size.width });
  const responsive = sources ? html` srcset="${sources.srcset}" sizes="${sources.sizes}"` : "";
  const picture =
    unrestricted.of(row) && links.thumb
      ? html`<img src="${links.thumb}"${responsive} alt="${title}" loading="lazy"${sizeAttributes}>`
      : html`<span class="nothumb">${noThumbnail(row)}</span>`;
  return html`<li><a href="${links.direct}">${picture}<span class="caption">${title}</span></a></li>`;
}

const GALLERY_STYLE =
  ".grid{list-style:none;padding:0;display:grid;grid-template-columns:repeat(auto-fill,minmax(160px,1fr));gap:1rem}" +
  ".grid a{display:block;text-decoration:none;color:inherit}" +
  ".grid img{width:100%;height:auto;margin:0;border-radius:4px;background:#eee}" +
  ".nothumb{display:flex;align-items:center;justify-content:center;aspect-ratio:4/3;background:#eee;color:#444}" +
  ".caption{display:block;margin-top:.25rem;overflow-wrap:anywhere}" +
  "nav{display:flex;gap:1rem;justify-content:space-between}";

async function gallery(c: Context<AppEnv>, number: number) {
  const { uploads: rows, last } = await galleryPage(requestStores(c), number);
  const origin = publicOrigin(c);
  const previous =
    number > 1 ? html`<a rel="prev" href="/gallery?page=${Math.min(number - 1, last)}">Newer</a>` : html`<span></span>`;
  const next = number < last ? html`<a rel="next" href="/gallery?page=${number + 1}">Older</a>` : html`<span></span>`;
  const prevLink = number > 1 ? html`<link rel="prev" href="/gallery?page=${Math.min(number - 1, last)}">` : "";
  const nextLink = number < last ? html`<link rel="next" href="/gallery?page=${number + 1}">` : "";
  const head = html`<link rel="alternate" type="application/atom+xml" title="Newest public uploads" href="/feed.atom">
${prevLink}${nextLink}`;
  const body = html`<main><h1>Public uploads</h1>
<p>Page ${number} of ${last}, newest first.</p>
${rows.length ? html`<ul class="grid">${rows.map((row) => tile(origin, row))}</ul>` : html`<p>Nothing here yet.</p>`}
<nav aria-label="Pages">${previous}${next}</nav></main>`;
  // PAGE_HEADERS' no-store is for upload pages: fromColoCache replaces it with what caches may keep of a listing.
  return c.html(
    page({ title: number > 1 ? `Public uploads, page ${number}` : "Public uploads", head, body, style: GALLERY_STYLE }),
    200,
    PAGE_HEADERS,
  );
}

async function sitemapIndex(c: Context<AppEnv>) {
  const origin = publicOrigin(c);
  const pages = await sitemapPages(requestStores(c));
  const entries = Array.from(
    { length: pages },
    (_, i) => xml`<sitemap><loc>${origin}/sitemap-${i + 1}.xml</loc></sitemap>\n`,
  );
  const body = xml`<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
${entries}</sitemapindex>
`;
  return c.body(body.text, 200, XML_HEADERS);
}

async function sitemap(c: Context<AppEnv>, number: number) {
  const origin = publicOrigin(c);
  const rows = await sitemapPage(requestStores(c), number);
  if (number > 1 && !rows.length) throw notFound("No such sitemap page.");
  const urls = rows.map(
    (row) =>
      xml`<url><loc>${uploadLinks(origin, row).direct}</loc><lastmod>${isoTimestamp(row.updatedAt)}</lastmod></url>\n`,
  );
  const body = xml`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
${number === 1 ? xml`<url><loc>${origin}/gallery</loc></url>\n` : null}${urls}</urlset>
`;
  return c.body(body.text, 200, XML_HEADERS);
}

async function feedEntry(origin: string, row: Upload) {
  const links = uploadLinks(origin, row);
  const { title, description } = visitorText(row);
  const picture = unrestricted.of(row) && links.thumb ? html`<p><img src="${links.thumb}" alt="${title}"></p>` : "";
  // HTML as the entry's text: escaped for HTML here, then once more as XML.
  const summary = String(await html`${picture}${description ? html`<p>${description}</p>` : ""}`);
  return xml`<entry>
<id>${links.direct}</id>
<title>${title}</title>
<link rel="alternate" type="text/html" href="${links.direct}"/>
<published>${isoTimestamp(row.createdAt)}</published>
<updated>${isoTimestamp(row.updatedAt)}</updated>
<content type="html">${summary}</content>
</entry>
`;
}

async function feed(c: Context<AppEnv>) {
  const origin = publicOrigin(c);
  const rows = await feedUploads(requestStores(c));
  const body = xml`<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
<id>${origin}/feed.atom</id>
<title>Newest public uploads</title>
<link rel="self" type="application/atom+xml" href="${origin}/feed.atom"/>
<link rel="alternate" type="text/html" href="${origin}/gallery"/>
<updated>${isoTimestamp(rows[0]?.updatedAt ?? 0)}</updated>
<author><name>${new URL(origin).host}</name></author>
${await Promise.all(rows.map((row) => feedEntry(origin, row)))}</feed>
`;
  return c.body(body.text, 200, { "Content-Type": "application/atom+xml; charset=utf-8" });
}

/** /sitemap-1.xml, /sitemap-2.xml…: a page number without leading zeros, so each page has one URL. */
const SITEMAP_PAGE = "/:page{sitemap-[1-9][0-9]{0,6}\\.xml}";

export const listings = new Hono<AppEnv>()
  .get("/gallery", (c) => {
    const number = galleryNumber(c);
    return listing(c, `/gallery?page=${number}`, () => gallery(c, number));
  })
  .all("/gallery", methodNotAllowed("GET"))
  .get("/sitemap.xml", (c) => listing(c, "/sitemap.xml", () => sitemapIndex(c)))
  .all("/sitemap.xml", methodNotAllowed("GET"))
  .get(SITEMAP_PAGE, (c) => {
    const number = Number(/\d+/.exec(c.req.param("page"))![0]);
    return listing(c, `/sitemap-${number}.xml`, () => sitemap(c, number));
  })
  .all(SITEMAP_PAGE, methodNotAllowed("GET"))
  .get("/feed.atom", (c) => listing(c, "/feed.atom", () => feed(c)))
  .all("/feed.atom", methodNotAllowed("GET"))
  .get("/robots.txt", (c) =>
    c.text(`User-agent: *\nDisallow: /api/\nDisallow: /d/\nSitemap: ${publicOrigin(c)}/sitemap.xml\n`, 200, {
      "Cache-Control": "public, max-age=3600",
    }),
  );
