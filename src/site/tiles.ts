import { html } from "hono/html";
import { badRequest } from "../errors";
import { awaitsConversion, locked, unrestricted, viewLimited } from "../model/policy";
import type { AlbumRow, UploadRow } from "../model/schema";
import { albumUrl } from "../uploads/albums/albums";
import type { PageAsked } from "../uploads/pagination";
import { uploadLinks } from "../uploads/public-urls";
import type { Markup } from "./html";
import { thumbnailSize, visitorText } from "./previews";
import { placeholderPaint } from "./placeholder-paint";
import { tileImageSources } from "./responsive-images";

/**
 * Grids of tiles, as the gallery and album pages show them: an upload (or an album, by its cover)
 * as its thumbnail, through its variants on screens of more pixels, and its title as visitors may
 * read it; a page number from the query, and the links to the pages beside it.
 */

/** What a locked album is called wherever it is listed or asks for its password. */
const LOCKED_ALBUM = "Password-protected album";

/** An album's title and description as anyone may read them without its password. */
export const albumVisitorText = (album: Pick<AlbumRow, "passwordHash" | "title" | "description">) =>
  album.passwordHash !== null
    ? { title: LOCKED_ALBUM, description: null }
    : { title: album.title ?? "Untitled album", description: album.description };

/** `?page=`: a whole number from 1 (none is 1), or a 400. */
export function pageNumber(raw: string | undefined): number {
  if (raw === undefined) return 1;
  if (!/^[1-9]\d{0,6}$/.test(raw)) throw badRequest("page must be a whole number of at least 1.");
  return Number(raw);
}

/**
 * The page a listing's URL asks for: `?page=N`, or `?after=` with the cursor its previous page
 * linked onward with (read by the listing; neither: page 1; both: 400).
 */
export function pageAskedOf(query: (name: string) => string | undefined): PageAsked {
  const after = query("after");
  if (after === undefined) return { page: pageNumber(query("page")) };
  if (query("page") !== undefined) throw badRequest("page and after: give one or the other, not both.");
  return { cursor: after };
}

/** The part of a listing's URL that says which page it is: what its cached copy is kept under. */
export const pageQuery = (asked: PageAsked) =>
  "page" in asked ? `page=${asked.page}` : `after=${encodeURIComponent(asked.cursor)}`;

/** What a tile without a thumbnail says instead. */
const noThumbnail = (row: UploadRow) =>
  locked.of(row) ? "Password-protected" : viewLimited.of(row) ? "Limited views" : "No preview yet";

/** The upload's thumbnail, if anyone may see it, through its variants where it has them. */
function picture(origin: string, row: UploadRow, alt: string): Markup | null {
  const links = uploadLinks(origin, row);
  const size = thumbnailSize(row);
  if (!unrestricted.of(row) || awaitsConversion.of(row) || !links.thumb) return null;
  const sizeAttributes = size ? html` width="${size.width}" height="${size.height}"` : "";
  const sources = size && tileImageSources(row, links.src, { url: links.thumb, width: size.width });
  const responsive = sources ? html` srcset="${sources.srcset}" sizes="${sources.sizes}"` : "";
  const paint = placeholderPaint(row);
  return html`<img src="${links.thumb}"${responsive} alt="${alt}" loading="lazy"${sizeAttributes}${paint}>`;
}

/** An upload's tile: its thumbnail (or why there is none) and title, linking to its page. */
export function uploadTile(origin: string, row: UploadRow): Markup {
  const { title } = visitorText(row);
  const shown = picture(origin, row, title) ?? html`<span class="nothumb">${noThumbnail(row)}</span>`;
  return html`<li style="${tileShape(row)}"><a href="${uploadLinks(origin, row).direct}">${shown}\
<span class="caption">${title}</span></a></li>`;
}

/** An album's tile: its cover's thumbnail (none while it is locked) and title, linking to its page. */
export function albumTile(origin: string, album: AlbumRow, cover: UploadRow | null): Markup {
  const { title } = albumVisitorText(album);
  const isLocked = album.passwordHash !== null;
  const shown =
    (!isLocked && cover && picture(origin, cover, title)) ||
    html`<span class="nothumb">${isLocked ? "Password-protected" : "No preview yet"}</span>`;
  const shape = !isLocked && cover ? tileShape(cover) : "--r:1.333";
  return html`<li style="${shape}"><a href="${albumUrl(origin, album.id)}">${shown}\
<span class="caption">${title}</span></a></li>`;
}

/**
 * Grids keep each photo's shape: justified rows, as Flickr's and Google Photos' are. Each tile
 * grows from its shape's width at ROW_HEIGHT (`--r`, its width over its height), so a row fills
 * the line and every photo in it is as tall as the others; the last row keeps its natural size.
 */
const ROW_HEIGHT = 180;
export const GRID_STYLE = `
.grid{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:var(--gap)}
.grid::after{content:"";flex-grow:1e6}
.grid li{flex:var(--r,1) 1 calc(var(--r,1) * ${ROW_HEIGHT}px);min-width:0}
.grid a{display:block;text-decoration:none;color:inherit}
.grid img,.grid .nothumb{display:block;width:100%;height:auto;aspect-ratio:var(--r,1);object-fit:cover;margin:0;
border-radius:var(--radius);background:var(--surface)}
.nothumb{display:flex;align-items:center;justify-content:center;color:var(--muted)}
.caption{display:block;margin-top:.25rem;overflow-wrap:anywhere;font-size:.9rem}
.caption small{display:block;color:var(--muted)}
@media (max-width:560px){.grid li{flex-basis:calc(var(--r,1) * ${ROW_HEIGHT / 2}px)}}`;

/** A tile's shape for the justified rows: its width over its height, held between 1:4 and 4:1. */
export function tileShape(row: Pick<UploadRow, "width" | "height">): string {
  const ratio = row.width && row.height ? Math.min(4, Math.max(0.25, row.width / row.height)) : 1;
  return `--r:${ratio.toFixed(3)}`;
}

/**
 * The links to the pages before and after page `number` of `last`: in the body (`nav`) and in
 * the head (`head`). `href` makes a page's URL; `next`, when given, is the next page's (by cursor:
 * null when none follows), so walking onward reads only the pages walked.
 */
export function pageLinks(
  number: number,
  last: number,
  href: (n: number) => string,
  { labels = ["Newer", "Older"], next }: { labels?: string[]; next?: string | null } = {},
) {
  const before = Math.min(number - 1, last);
  const after = next === undefined ? (number < last ? href(number + 1) : null) : next;
  const nav = html`<nav class="pages" aria-label="Pages">${
    number > 1 ? html`<a rel="prev" href="${href(before)}">${labels[0]}</a>` : html`<span></span>`
  }${after ? html`<a rel="next" href="${after}">${labels[1]}</a>` : html`<span></span>`}</nav>`;
  const head = html`${number > 1 ? html`<link rel="prev" href="${href(before)}">` : ""}${
    after ? html`<link rel="next" href="${after}">` : ""
  }`;
  return { nav, head };
}
