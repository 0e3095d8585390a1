import { Hono, type Context } from "hono";
import { html } from "hono/html";
import { requestStores } from "../deps";
import type { AppEnv } from "../env";
import { notFound } from "../errors";
import { smallBody } from "../http/body";
import { NO_STORE } from "../http/cache-control";
import { methodNotAllowed } from "../http/method-not-allowed";
import { publicOrigin } from "../http/request-info";
import type { AlbumRow } from "../model/schema";
import { settingsOf } from "../settings";
import { checkAlbumUrl, signAlbumUrl } from "../uploads/access/signed-links";
import { albumCover, albumForPage, albumPageUploads } from "../uploads/albums/pages";
import { albumUrl } from "../uploads/albums/albums";
import { uploadLinks } from "../uploads/public-urls";
import { NOINDEX, page, PAGE_HEADERS } from "./html";
import { passwordForm, refusedPassword } from "./password-form";
import { albumOembedAnswer, type OembedRequest } from "./oembed";
import { albumPreviewTags } from "./previews";
import { shareOptions } from "./share-options";
import { albumVisitorText, GRID_STYLE, pageAskedOf, pageLinks, uploadTile } from "./tiles";
import type { PageAsked } from "../uploads/pagination";

/**
 * An album's page, /a/{id}: its title, description and uploads as tiles (each as its own page
 * would show it to a visitor: src/uploads/albums/pages.ts), a page of ALBUM_PAGE_SIZE at a time.
 * A private album has no page for visitors (404, as if there were none: pages have no owner
 * session). A locked album's page is the password form, with nothing of the album, its uploads
 * or its cover; the right password answers the page with its links to other pages signed
 * (signed-links.ts, over the album's path and for its password as it is), so the password is asked
 * once for SIGNED_LINK_SECONDS, or until it changes.
 * Link previews and oEmbed describe only an album anyone with the link may see.
 */

/**
 * The album `id` (by default the page's), if a visitor may know of it: none for a private one,
 * answered word for word as an unknown album by its page, its form and oEmbed alike.
 */
async function visibleAlbum(c: Context<AppEnv>, id = c.req.param("id")!): Promise<AlbumRow> {
  const album = await albumForPage(requestStores(c), id);
  if (!album || album.visibility === "private") throw notFound("No such album.");
  return album;
}

const isLocked = (album: AlbumRow) => album.passwordHash !== null;

/**
 * The album's page `number`. `signed` is the query (exp and sig) that opened a locked album:
 * its page links carry it.
 */
async function albumPage(c: Context<AppEnv>, album: AlbumRow, asked: PageAsked, signed: string | null) {
  const deps = requestStores(c);
  const origin = publicOrigin(c);
  const url = albumUrl(origin, album.id);
  const locked = isLocked(album);
  const [{ uploads, number, total, last, next }, cover] = await Promise.all([
    albumPageUploads(deps, album.id, asked),
    locked ? null : albumCover(deps, album.id),
  ]);
  const title = album.title ?? "Untitled album";
  const indexable = album.visibility === "public" && !locked;
  const oembed = `${origin}/oembed?url=${encodeURIComponent(url)}&format=json`;
  const cards = locked
    ? ""
    : albumPreviewTags(
        { title, description: album.description, url },
        cover && { row: cover, links: uploadLinks(origin, cover) },
        { oembed, site: new URL(origin).host },
      );
  const query = (part: string) => `/a/${album.id}?${signed ? `${signed}&` : ""}${part}`;
  const links = pageLinks(number, last, (n) => query(`page=${n}`), {
    labels: ["Previous", "Next"],
    next: next && query(`after=${encodeURIComponent(next)}`),
  });
  const head = html`${indexable ? "" : NOINDEX}
${cards}${links.head}<script src="/assets/page.js" defer></script>`;
  const count = html`${total} upload${total === 1 ? "" : "s"}${last > 1 ? html`, page ${number} of ${last}` : ""}.`;
  const body = html`<main><h1>${title}</h1>
${album.description ? html`<p>${album.description}</p>` : ""}
<p>${count}</p>
${uploads.length ? html`<ul class="grid">${uploads.map((row) => uploadTile(origin, row))}</ul>` : ""}
${links.nav}
${shareOptions([{ name: "Album link", text: url }])}</main>`;
  return c.html(page({ title, head, body, style: GRID_STYLE }), 200, {
    ...PAGE_HEADERS,
    ...(indexable ? {} : { "X-Robots-Tag": "noindex" }),
  });
}

/** The query that signs the locked album's path for SIGNED_LINK_SECONDS: `exp=…&sig=…`. */
async function signedQuery(c: Context<AppEnv>, album: AlbumRow) {
  const url = albumUrl(publicOrigin(c), album.id);
  const signed = await signAlbumUrl(settingsOf(c.env).linkSigningSecret, url, c.var.now(), album.passwordHash!);
  return new URL(signed).search.slice(1);
}

/** The oEmbed answer for an album's page (GET /oembed with url=/a/{id}). */
export async function albumOembed(c: Context<AppEnv>, request: OembedRequest) {
  const origin = publicOrigin(c);
  const album = await visibleAlbum(c, request.id);
  const locked = isLocked(album);
  const cover = locked ? null : await albumCover(requestStores(c), album.id);
  const answer = albumOembedAnswer(
    { title: albumVisitorText(album).title, locked },
    cover && { row: cover, thumb: uploadLinks(origin, cover).thumb },
    request,
    { name: new URL(origin).host, url: origin },
  );
  return c.json(answer, 200, { "Cache-Control": NO_STORE, "Access-Control-Allow-Origin": "*" });
}

export const albumPages = new Hono<AppEnv>()
  .get("/a/:id", async (c) => {
    const album = await visibleAlbum(c);
    const asked = pageAskedOf((name) => c.req.query(name));
    if (!isLocked(album)) return albumPage(c, album, asked, null);
    const url = new URL(c.req.url);
    const check = await checkAlbumUrl(settingsOf(c.env).linkSigningSecret, url, c.var.now(), album.passwordHash!);
    if (check === "valid") {
      const signed = `exp=${url.searchParams.get("exp")}&sig=${url.searchParams.get("sig")}`;
      return albumPage(c, album, asked, signed);
    }
    return passwordForm(c, "album", 200, check === "expired" ? "The link has expired: enter the password again." : "");
  })
  /** The password of a locked album; guesses are throttled per album and per client, as uploads' are. */
  .post("/a/:id", smallBody, async (c) => {
    const album = await visibleAlbum(c);
    if (!isLocked(album)) return c.redirect(`/a/${album.id}`, 303);
    const refused = await refusedPassword(c, "album", `album:${album.id}`, album.passwordHash!);
    if (refused) return refused;
    return albumPage(c, album, { page: 1 }, await signedQuery(c, album));
  })
  .all("/a/:id", methodNotAllowed("GET", "POST"));
