import { Hono, type Context } from "hono";
import { html } from "hono/html";
import { requestStores } from "../deps";
import type { AppEnv } from "../env";
import { notFound } from "../errors";
import { fromColoCache } from "../http/colo-cache";
import { publicOrigin } from "../http/request-info";
import { limitListing } from "../http/throttles/network-limits";
import { isoTimestamp } from "../time";
import { FEED_ENTRIES, feedUploads, galleryPage, sitemapPage, sitemapPages } from "../uploads/listings";
import { albumGalleryPage, albumSitemapPage, albumSitemapPages, feedAlbums } from "../uploads/albums/pages";
import type { AlbumRow, UploadRow } from "../model/schema";
import { unrestricted } from "../model/policy";
import { albumUrl } from "../uploads/albums/albums";
import { uploadLinks } from "../uploads/public-urls";
import { page, PAGE_HEADERS } from "./html";
import { methodNotAllowed } from "../http/method-not-allowed";
import { visitorText } from "./previews";
import { albumTile, albumVisitorText, GRID_STYLE, pageAskedOf, pageLinks, pageQuery, uploadTile } from "./tiles";
import type { PageAsked } from "../uploads/pagination";
import { xml } from "./xml";

/**
 * The site's listings of public uploads (the spec's "listed on the site and indexable"): the
 * gallery, the sitemap and an Atom feed, and of public albums (/gallery/albums, the
 * sitemap-albums-N.xml pages, entries of the feed; a locked album as its page shows it without
 * the password). Unlisted and private uploads are in none of them; a locked or view-limited
 * public upload is listed as its page shows it without the password
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

async function gallery(c: Context<AppEnv>, asked: PageAsked) {
  const { uploads: rows, number, last, next } = await galleryPage(requestStores(c), asked);
  const origin = publicOrigin(c);
  const onward = next && `/gallery?after=${encodeURIComponent(next)}`;
  const links = pageLinks(number, last, (n) => `/gallery?page=${n}`, { next: onward });
  const head = html`<link rel="alternate" type="application/atom+xml" title="Newest public uploads" href="/feed.atom">
${links.head}<script src="/assets/page.js" defer></script>`;
  const tiles = rows.map((row) => uploadTile(origin, row));
  const body = html`<main><h1>Public uploads</h1>
<p>Page ${number} of ${last}, newest first. <a href="/gallery/albums">Public albums</a></p>
${tiles.length ? html`<ul class="grid">${tiles}</ul>` : html`<p>Nothing here yet.</p>`}
${links.nav}</main>`;
  // PAGE_HEADERS' no-store is for upload pages: fromColoCache replaces it with what caches may keep of a listing.
  return c.html(
    page({ title: number > 1 ? `Public uploads, page ${number}` : "Public uploads", head, body, style: GRID_STYLE }),
    200,
    PAGE_HEADERS,
  );
}

/** The gallery of public albums: each by its cover, newest first; a locked one by no more than its page shows. */
async function albumGallery(c: Context<AppEnv>, asked: PageAsked) {
  const { albums, number, last, next } = await albumGalleryPage(requestStores(c), asked);
  const origin = publicOrigin(c);
  const onward = next && `/gallery/albums?after=${encodeURIComponent(next)}`;
  const links = pageLinks(number, last, (n) => `/gallery/albums?page=${n}`, { next: onward });
  const tiles = albums.map(({ album, cover }) => albumTile(origin, album, cover));
  const body = html`<main><h1>Public albums</h1>
<p>Page ${number} of ${last}, newest first. <a href="/gallery">Public uploads</a></p>
${tiles.length ? html`<ul class="grid">${tiles}</ul>` : html`<p>No albums yet.</p>`}
${links.nav}</main>`;
  const title = number > 1 ? `Public albums, page ${number}` : "Public albums";
  return c.html(page({ title, head: links.head, body, style: GRID_STYLE }), 200, PAGE_HEADERS);
}

async function sitemapIndex(c: Context<AppEnv>) {
  const origin = publicOrigin(c);
  const [pages, albumPages] = await Promise.all([sitemapPages(requestStores(c)), albumSitemapPages(requestStores(c))]);
  const entry = (name: string) => xml`<sitemap><loc>${origin}/${name}</loc></sitemap>\n`;
  const entries = [
    ...Array.from({ length: pages }, (_, i) => entry(`sitemap-${i + 1}.xml`)),
    ...Array.from({ length: albumPages }, (_, i) => entry(`sitemap-albums-${i + 1}.xml`)),
  ];
  const body = xml`<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
${entries}</sitemapindex>
`;
  return c.body(body.text, 200, XML_HEADERS);
}

async function sitemap(c: Context<AppEnv>, number: number) {
  const origin = publicOrigin(c);
  const rows = await sitemapPage(requestStores(c), number);
  const galleries = xml`<url><loc>${origin}/gallery</loc></url>\n<url><loc>${origin}/gallery/albums</loc></url>\n`;
  if (number > 1 && !rows.length) throw notFound("No such sitemap page.");
  const urls = rows.map(
    (row) =>
      xml`<url><loc>${uploadLinks(origin, row).direct}</loc><lastmod>${isoTimestamp(row.updatedAt)}</lastmod></url>\n`,
  );
  const body = xml`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
${number === 1 ? galleries : null}${urls}</urlset>
`;
  return c.body(body.text, 200, XML_HEADERS);
}

/** A page of public albums' pages: unlocked or locked (whose page is the password form), as uploads are. */
async function albumSitemap(c: Context<AppEnv>, number: number) {
  const origin = publicOrigin(c);
  const albums = await albumSitemapPage(requestStores(c), number);
  if (!albums.length) throw notFound("No such sitemap page.");
  const urls = albums.map(
    (album) =>
      xml`<url><loc>${albumUrl(origin, album.id)}</loc><lastmod>${isoTimestamp(album.updatedAt)}</lastmod></url>\n`,
  );
  const body = xml`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
${urls}</urlset>
`;
  return c.body(body.text, 200, XML_HEADERS);
}

async function feedEntry(origin: string, row: UploadRow) {
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

/** An album's entry: its cover's thumbnail and its description, none of either while it is locked. */
async function albumFeedEntry(origin: string, album: AlbumRow, cover: UploadRow | null) {
  const link = albumUrl(origin, album.id);
  const { title, description } = albumVisitorText(album);
  const thumb = cover && album.passwordHash === null ? uploadLinks(origin, cover).thumb : null;
  const picture = thumb ? html`<p><img src="${thumb}" alt="${title}"></p>` : "";
  const summary = String(await html`${picture}${description ? html`<p>${description}</p>` : ""}`);
  return xml`<entry>
<id>${link}</id>
<title>${title}</title>
<link rel="alternate" type="text/html" href="${link}"/>
<published>${isoTimestamp(album.createdAt)}</published>
<updated>${isoTimestamp(album.updatedAt)}</updated>
<content type="html">${summary}</content>
</entry>
`;
}

async function feed(c: Context<AppEnv>) {
  const origin = publicOrigin(c);
  const [uploads, albums] = await Promise.all([feedUploads(requestStores(c)), feedAlbums(requestStores(c))]);
  // The newest of both, FEED_ENTRIES in all.
  const rows = [
    ...uploads.map((row) => ({
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
      entry: () => feedEntry(origin, row),
    })),
    ...albums.map(({ album, cover }) => ({
      createdAt: album.createdAt,
      updatedAt: album.updatedAt,
      entry: () => albumFeedEntry(origin, album, cover),
    })),
  ]
    .sort((a, b) => b.createdAt - a.createdAt)
    .slice(0, FEED_ENTRIES);
  const body = xml`<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
<id>${origin}/feed.atom</id>
<title>Newest public uploads</title>
<link rel="self" type="application/atom+xml" href="${origin}/feed.atom"/>
<link rel="alternate" type="text/html" href="${origin}/gallery"/>
<updated>${isoTimestamp(rows[0]?.updatedAt ?? 0)}</updated>
<author><name>${new URL(origin).host}</name></author>
${await Promise.all(rows.map((row) => row.entry()))}</feed>
`;
  return c.body(body.text, 200, { "Content-Type": "application/atom+xml; charset=utf-8" });
}

/** /sitemap-1.xml, /sitemap-2.xml…: a page number without leading zeros, so each page has one URL. */
const SITEMAP_PAGE = "/:page{sitemap-[1-9][0-9]{0,6}\\.xml}";
const ALBUM_SITEMAP_PAGE = "/:page{sitemap-albums-[1-9][0-9]{0,6}\\.xml}";

export const listings = new Hono<AppEnv>()
  .get("/gallery", (c) => {
    const asked = pageAskedOf((name) => c.req.query(name));
    return listing(c, `/gallery?${pageQuery(asked)}`, () => gallery(c, asked));
  })
  .all("/gallery", methodNotAllowed("GET"))
  .get("/gallery/albums", (c) => {
    const asked = pageAskedOf((name) => c.req.query(name));
    return listing(c, `/gallery/albums?${pageQuery(asked)}`, () => albumGallery(c, asked));
  })
  .all("/gallery/albums", methodNotAllowed("GET"))
  .get("/sitemap.xml", (c) => listing(c, "/sitemap.xml", () => sitemapIndex(c)))
  .all("/sitemap.xml", methodNotAllowed("GET"))
  .get(SITEMAP_PAGE, (c) => {
    const number = Number(/\d+/.exec(c.req.param("page"))![0]);
    return listing(c, `/sitemap-${number}.xml`, () => sitemap(c, number));
  })
  .all(SITEMAP_PAGE, methodNotAllowed("GET"))
  .get(ALBUM_SITEMAP_PAGE, (c) => {
    const number = Number(/\d+/.exec(c.req.param("page"))![0]);
    return listing(c, `/sitemap-albums-${number}.xml`, () => albumSitemap(c, number));
  })
  .all(ALBUM_SITEMAP_PAGE, methodNotAllowed("GET"))
  .get("/feed.atom", (c) => listing(c, "/feed.atom", () => feed(c)))
  .all("/feed.atom", methodNotAllowed("GET"))
  .get("/robots.txt", (c) =>
    c.text(`User-agent: *\nDisallow: /api/\nDisallow: /d/\nSitemap: ${publicOrigin(c)}/sitemap.xml\n`, 200, {
      "Cache-Control": "public, max-age=3600",
    }),
  );
