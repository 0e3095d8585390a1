import { Hono, type Context } from "hono";
import { html } from "hono/html";
import { requestStores } from "../deps";
import type { AppEnv } from "../env";
import { notFound } from "../errors";
import { smallBody } from "../http/body";
import { signUrl } from "../uploads/access/signed-links";
import { publicOrigin } from "../http/request-info";
import { settingsOf } from "../settings";
import { uploadForPage, uploadForPreview } from "../uploads/pages";
import { embeddable, locked, pageIndexable, signedPlayback } from "../model/policy";
import { uploadLinks } from "../uploads/public-urls";
import { removeUploadByToken, uploadForDeleteLink } from "../uploads/remove";
import { DELETED } from "../uploads/schemas/resources";
import { EMBED_HEADERS, NOINDEX, page, PAGE_HEADERS, UPLOADER_HEADERS, VIDEO_PAGE_HEADERS } from "./html";
import { passwordForm, refusedPassword } from "./password-form";
import { TUS_CLIENT_PATH, TUS_CLIENT_SCRIPT, UPLOADER_BODY, UPLOADER_STYLE } from "./uploader-page";
import UPLOADER_SCRIPT from "./browser/uploader.js";
import CLIENT_CONFIGS_SCRIPT from "./browser/client-configs.js";
import { NO_STORE, publicFor, VERSIONED } from "../http/cache-control";
import { oembedAnswer, readOembedRequest } from "./oembed";
import { albumOembed } from "./album-pages";
import PAGE_SCRIPT from "./browser/page.js";
import PLAYER_SCRIPT from "./browser/player.js";
import { HLS_PATH, HLS_SCRIPT, PLAYER_STYLE } from "./player";
import { placeholderPaint } from "./placeholder-paint";
import { playbackLinks } from "../uploads/streaming/playback";
import { previewTags, uploadTitle } from "./previews";
import { pageImageSources } from "./responsive-images";
import { shareOptions, shareSnippets } from "./share-options";
import { methodNotAllowed } from "../http/method-not-allowed";
import type { UploadRow } from "../model/schema";

const deps = requestStores;

const gonePage = (c: Context<AppEnv>, heading: string, text: string) =>
  c.html(page({ title: heading, head: NOINDEX, body: html`<h1>${heading}</h1><p>${text}</p>` }), 410, PAGE_HEADERS);

/** The live upload a page is about, or the page that says why there is none. */
async function pageUpload(c: Context<AppEnv>): Promise<UploadRow | Response> {
  const found = await uploadForPage(deps(c), c.req.param("id")!);
  if (!found) throw notFound("No such upload.");
  if ("upload" in found) return found.upload;
  if (found.gone === "expired") {
    return gonePage(c, "This upload has expired", "It was set to be deleted automatically, and it has been.");
  }
  const text = "It could be viewed a limited number of times, and it has been.";
  return gonePage(c, "This upload is no longer available", text);
}

/** The site's own URLs about an upload, besides its links. */
function siteUrls(c: Context<AppEnv>, row: UploadRow) {
  const origin = publicOrigin(c);
  const links = uploadLinks(origin, row);
  return {
    links,
    embed: `${origin}/e/${row.id}`,
    oembed: `${origin}/oembed?url=${encodeURIComponent(links.direct)}&format=json`,
    site: new URL(origin).host,
  };
}

/**
 * The file as the page shows it: a video with its thumbnail as poster, or the image, through its
 * variants where it has them (responsive-images.ts), filling the viewport when `fill`.
 */
function mediaElement(
  row: UploadRow,
  src: string,
  poster: string | null,
  title: string,
  fill = false,
  playback: Playback | null = null,
) {
  const size = row.width && row.height ? html` width="${row.width}" height="${row.height}"` : "";
  // Not on the embed page (`fill`): it runs no script, and so could not take it away once loaded.
  const paint = fill ? "" : placeholderPaint(row);
  if (row.type === "video") {
    const posterAttribute = poster ? html` poster="${poster}"` : "";
    // With a ladder, player.js plays it, so the MP4 is not fetched first (a view-limited
    // upload's would spend a view of its own); without the script, a click plays the MP4.
    const storyboard = playback?.storyboard ? html` data-storyboard="${playback.storyboard}"` : "";
    const ladder = playback ? html` preload="none" data-hls="${playback.hls}"${storyboard}` : html` preload="metadata"`;
    return html`<video controls playsinline${ladder}${posterAttribute}${size}${paint} src="${src}"></video>`;
  }
  const sources = pageImageSources(row, src, fill);
  const responsive = sources ? html` srcset="${sources.srcset}" sizes="${sources.sizes}"` : "";
  return html`<img src="${src}"${responsive}${size}${paint} alt="${title}">`;
}

type Playback = NonNullable<ReturnType<typeof playbackLinks>>;

/**
 * A video's ladder as its page plays it (null without one): its master and storyboard, signed
 * when its playback is (a locked upload's page shows it only after the password).
 */
async function pagePlayback(c: Context<AppEnv>, row: UploadRow): Promise<Playback | null> {
  const links = playbackLinks(publicOrigin(c), row);
  if (!links || !signedPlayback(row)) return links;
  const sign = (url: string) => signUrl(settingsOf(c.env).linkSigningSecret, url, c.var.now());
  return { hls: await sign(links.hls), storyboard: links.storyboard && (await sign(links.storyboard)) };
}

const playerScripts = html`<script src="${HLS_PATH}" defer></script><script src="/assets/player.js" defer></script>`;

/** The page showing the file at `src` (a signed link for a locked upload). */
async function uploadPage(c: Context<AppEnv>, row: UploadRow, src: string) {
  const title = uploadTitle(row);
  const urls = siteUrls(c, row);
  const indexable = pageIndexable(row);
  const playback = await pagePlayback(c, row);
  const head = html`${indexable ? "" : NOINDEX}
${previewTags(row, urls.links, urls)}<script src="/assets/page.js" defer></script>${playback ? playerScripts : ""}`;
  const body = html`<main><h1>${title}</h1>
${mediaElement(row, src, urls.links.thumb, title, false, playback)}
${row.description ? html`<p>${row.description}</p>` : ""}
<p><a href="${src}">Direct link</a></p>
${shareOptions(shareSnippets(row, urls.links, urls.embed))}</main>`;
  const style = playback ? PLAYER_STYLE : undefined;
  return c.html(page({ title, head, body, style }), 200, {
    ...(playback ? VIDEO_PAGE_HEADERS : PAGE_HEADERS),
    ...(indexable ? {} : { "X-Robots-Tag": "noindex" }),
  });
}

/** Our own scripts change with each deploy under the same path: kept an hour. */
export const script = (c: Context<AppEnv>, source: string, cacheControl = publicFor(3600)) =>
  c.body(source, 200, {
    "Content-Type": "text/javascript; charset=utf-8",
    "Cache-Control": cacheControl,
    "X-Content-Type-Options": "nosniff",
  });

export const pages = new Hono<AppEnv>()
  .get("/assets/page.js", (c) => script(c, PAGE_SCRIPT))
  .get("/assets/uploader.js", (c) => script(c, UPLOADER_SCRIPT))
  .get("/assets/client-configs.js", (c) => script(c, CLIENT_CONFIGS_SCRIPT))
  .get("/assets/player.js", (c) => script(c, PLAYER_SCRIPT))
  .get(HLS_PATH, (c) => script(c, HLS_SCRIPT, VERSIONED))
  .get(TUS_CLIENT_PATH, (c) => script(c, TUS_CLIENT_SCRIPT, VERSIONED))
  /** The browser uploader: a page of its own; all it does is its scripts'. */
  .get("/upload", (c) => {
    const head = html`<script src="/assets/page.js" defer></script>\
<script src="/assets/client-configs.js" defer></script><script src="${TUS_CLIENT_PATH}" defer></script>\
<script src="/assets/uploader.js" defer></script>`;
    return c.html(page({ title: "Upload", head, body: UPLOADER_BODY, style: UPLOADER_STYLE }), 200, UPLOADER_HEADERS);
  })
  .all("/upload", methodNotAllowed("GET"))
  /**
   * The player other sites frame (oEmbed's video html, the HTML embed code): the file alone.
   * Only for what may be previewed: a private, locked or view-limited upload has none.
   */
  .get("/e/:id", async (c) => {
    const row = await pageUpload(c);
    if (row instanceof Response) return row;
    if (!embeddable(row)) throw notFound("No such upload.");
    const { links } = siteUrls(c, row);
    const title = uploadTitle(row);
    const style =
      "body{margin:0;max-width:none;padding:0;background:#000}" +
      "img,video{width:100vw;height:100vh;object-fit:contain;margin:0}";
    return c.html(
      page({ title, head: NOINDEX, body: mediaElement(row, links.src, links.thumb, title, true), style, header: null }),
      200,
      EMBED_HEADERS,
    );
  })
  .all("/e/:id", methodNotAllowed("GET"))
  .get("/oembed", async (c) => {
    const origin = publicOrigin(c);
    const request = readOembedRequest(c.req.query(), origin);
    if (request.kind === "album") return albumOembed(c, request);
    const row = await uploadForPreview(deps(c), request.id);
    if (!row) throw notFound("No such upload.");
    const urls = siteUrls(c, row);
    const answer = oembedAnswer(row, urls.links, request, { name: urls.site, url: origin, embed: urls.embed });
    return c.json(answer, 200, { "Cache-Control": NO_STORE, "Access-Control-Allow-Origin": "*" });
  })
  .all("/oembed", methodNotAllowed("GET"))
  /**
   * The upload's page. A private upload has no page for visitors: the link leads to the file
   * (the spec's "sends everyone except the owner straight to the file"; the API has no owner
   * session on pages, so everyone is sent).
   */
  .get("/v/:id", async (c) => {
    const row = await pageUpload(c);
    if (row instanceof Response) return row;
    if (locked.of(row)) return passwordForm(c, "upload", 200);
    if (row.visibility === "private") return c.redirect(uploadLinks(publicOrigin(c), row).src, 302);
    return uploadPage(c, row, uploadLinks(publicOrigin(c), row).src);
  })
  /**
   * The password of a locked upload: right, and the page shows the file through a signed link.
   * Guesses are throttled per upload and per client before the (slow) check runs.
   */
  .post("/v/:id", smallBody, async (c) => {
    const row = await pageUpload(c);
    if (row instanceof Response) return row;
    if (!locked.of(row)) return c.redirect(`/v/${row.id}`, 303);
    const refused = await refusedPassword(c, "upload", row.id, row.passwordHash!);
    if (refused) return refused;
    return uploadPage(
      c,
      row,
      await signUrl(settingsOf(c.env).linkSigningSecret, uploadLinks(publicOrigin(c), row).src, c.var.now()),
    );
  })
  .all("/v/:id", methodNotAllowed("GET", "POST"))
  /** delete_url: GET only asks (link previews and prefetchers must not delete); POST or DELETE deletes. */
  .get("/d/:id/:token", async (c) => {
    const row = await uploadForDeleteLink(deps(c), c.req.param("id"), c.req.param("token"));
    const body = html`<h1>Delete this upload?</h1>
<p>This permanently deletes ${row.title ? `“${row.title}”` : `upload ${row.id}`}. It cannot be undone.</p>
<form method="post"><button type="submit">Delete permanently</button></form>`;
    return c.html(page({ title: "Delete upload", head: NOINDEX, body }), 200, PAGE_HEADERS);
  })
  .on(["POST", "DELETE"], "/d/:id/:token", async (c) => {
    await removeUploadByToken(deps(c), c.req.param("id"), c.req.param("token"));
    if (c.req.method === "POST" && (c.req.header("Accept") ?? "").includes("text/html")) {
      return c.html(
        page({ title: "Deleted", body: html`<h1>Deleted</h1><p>The upload was deleted.</p>` }),
        200,
        PAGE_HEADERS,
      );
    }
    return c.json(DELETED);
  })
  .all("/d/:id/:token", methodNotAllowed("GET", "POST", "DELETE"));
