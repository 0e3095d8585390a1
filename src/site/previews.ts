import { html } from "hono/html";
import { THUMB_WIDTH } from "../model/spec-limits";
import { locked, unrestricted } from "../model/policy";
import type { uploadLinks } from "../uploads/public-urls";
import type { UploadRow } from "../model/schema";
import type { Markup } from "./html";
import { previewImage } from "./responsive-images";

export type Links = ReturnType<typeof uploadLinks>;

/** What pages, previews and embeds call an upload. */
export const uploadTitle = (row: Pick<UploadRow, "title">) => row.title ?? "Untitled upload";

/** Text for a double-quoted attribute of markup built as a string (embed codes to copy). */
export const escapeAttribute = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

/** The iframe of an upload's player page: oEmbed's video `html` and the page's HTML embed code. */
export const playerIframe = (embed: string, title: string, size: { width: number; height: number } | null) => {
  const sizeAttributes = size ? ` width="${size.width}" height="${size.height}"` : "";
  const attributes = `src="${escapeAttribute(embed)}"${sizeAttributes} title="${escapeAttribute(title)}"`;
  return `<iframe ${attributes} allowfullscreen style="border:0"></iframe>`;
};

/** What a locked upload is called wherever it is listed. */
const LOCKED_TITLE = "Password-protected upload";

/**
 * The title and description anyone may read without the password: what the upload's page shows
 * before it is given. A locked upload's page is the password form and nothing of the upload, as
 * a title or description can give away as much as the file ("scan of my passport"). A
 * view-limited upload's page shows both: only fetching its file spends a view. Listings show no
 * more than this.
 */
export const visitorText = (
  row: Pick<UploadRow, "passwordHash" | "title" | "description">,
): { title: string; description: string | null } =>
  locked.of(row)
    ? { title: LOCKED_TITLE, description: null }
    : { title: uploadTitle(row), description: row.description };

/** The thumbnail's size: THUMB_WIDTH wide (a narrower image keeps its width), height in proportion. */
export function thumbnailSize(row: Pick<UploadRow, "width" | "height">): { width: number; height: number } | null {
  if (!row.width || !row.height) return null;
  const width = Math.min(THUMB_WIDTH, row.width);
  return { width, height: Math.max(1, Math.round((width * row.height) / row.width)) };
}

/** Image types every preview renderer shows; anything else is previewed by its thumbnail alone. */
const PREVIEWABLE_IMAGES = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);

/** The type of oEmbed discovery's link: the page's oEmbed answer is JSON. */
const OEMBED_TYPE = "application/json+oembed";

const property = (name: string, content: string | number | null | undefined) =>
  content === null || content === undefined ? "" : html`<meta property="${name}" content="${String(content)}">\n`;
const named = (name: string, content: string | number | null | undefined) =>
  content === null || content === undefined ? "" : html`<meta name="${name}" content="${String(content)}">\n`;

/**
 * Open Graph and Twitter card tags, and oEmbed discovery, for an upload's page. An image is
 * previewed by itself, or its 1200 px variant when wider (type and size given), with its
 * thumbnail as a fallback; a video as
 * og:video (the MP4, with the thumbnail as poster) and as a Twitter player card on the embed
 * page. `embed` and `oembed` are the URLs of the player page and of the page's oEmbed answer.
 */
export function previewTags(
  row: UploadRow,
  links: Links,
  urls: { embed: string; oembed: string; site: string },
): Markup {
  const title = uploadTitle(row);
  const common = html`${[
    property("og:site_name", urls.site),
    property("og:title", title),
    property("og:url", links.direct),
    property("og:description", row.description),
    named("twitter:title", title),
    named("twitter:description", row.description),
  ]}`;
  // Only an unrestricted upload's file is shown in previews: the others get a title and nothing else.
  if (!unrestricted.of(row)) return html`${property("og:type", "website")}${common}${named("twitter:card", "summary")}`;

  const thumb = thumbnailSize(row);
  const thumbTags = links.thumb
    ? html`${[
        property("og:image", links.thumb),
        property("og:image:type", "image/webp"),
        property("og:image:width", thumb?.width),
        property("og:image:height", thumb?.height),
        property("og:image:alt", title),
      ]}`
    : "";
  const discovery = html`<link rel="alternate" type="${OEMBED_TYPE}" href="${urls.oembed}" title="${title}">\n`;

  if (row.type === "video") {
    return html`${[
      property("og:type", "video.other"),
      common,
      property("og:video", links.src),
      property("og:video:secure_url", links.src.startsWith("https:") ? links.src : null),
      property("og:video:type", row.mime),
      property("og:video:width", row.width),
      property("og:video:height", row.height),
      thumbTags,
      named("twitter:card", "player"),
      named("twitter:player", urls.embed),
      named("twitter:player:width", row.width ?? 640),
      named("twitter:player:height", row.height ?? 360),
      named("twitter:player:stream", links.src),
      named("twitter:player:stream:content_type", row.mime),
      named("twitter:image", links.thumb),
      discovery,
    ]}`;
  }
  const preview = previewImage(row, links.src);
  const full = PREVIEWABLE_IMAGES.has(row.mime)
    ? html`${[
        property("og:image", preview.url),
        property("og:image:type", row.mime),
        property("og:image:width", preview.width),
        property("og:image:height", preview.height),
        property("og:image:alt", title),
      ]}`
    : "";
  return html`${[
    property("og:type", "website"),
    common,
    full,
    thumbTags,
    named("twitter:card", "summary_large_image"),
    named("twitter:image", PREVIEWABLE_IMAGES.has(row.mime) ? preview.url : links.thumb),
    named("twitter:image:alt", title),
    discovery,
  ]}`;
}

/**
 * Open Graph and Twitter card tags, and oEmbed discovery, for an album's page, by its cover
 * (src/uploads/albums/pages.ts: an upload anyone may see in full, with a thumbnail): an image
 * by itself (or its 1200 px variant) with the thumbnail as a fallback, a video by its thumbnail.
 * Without a cover, a summary card of its title and description. Only for an album whose page
 * shows itself without a password: a locked album's page has none of this.
 */
export function albumPreviewTags(
  album: { title: string; description: string | null; url: string },
  cover: { row: UploadRow; links: Links } | null,
  urls: { oembed: string; site: string },
): Markup {
  const common = html`${[
    property("og:type", "website"),
    property("og:site_name", urls.site),
    property("og:title", album.title),
    property("og:url", album.url),
    property("og:description", album.description),
    named("twitter:title", album.title),
    named("twitter:description", album.description),
  ]}`;
  const discovery = html`<link rel="alternate" type="${OEMBED_TYPE}" href="${urls.oembed}" title="${album.title}">\n`;
  if (!cover?.links.thumb) return html`${common}${named("twitter:card", "summary")}${discovery}`;
  const { row, links } = cover;
  const thumb = thumbnailSize(row);
  const full = row.type === "image" && PREVIEWABLE_IMAGES.has(row.mime) ? previewImage(row, links.src) : null;
  return html`${[
    common,
    full
      ? html`${[
          property("og:image", full.url),
          property("og:image:type", row.mime),
          property("og:image:width", full.width),
          property("og:image:height", full.height),
          property("og:image:alt", album.title),
        ]}`
      : "",
    property("og:image", links.thumb),
    property("og:image:type", "image/webp"),
    property("og:image:width", thumb?.width),
    property("og:image:height", thumb?.height),
    property("og:image:alt", album.title),
    named("twitter:card", "summary_large_image"),
    named("twitter:image", full ? full.url : links.thumb),
    named("twitter:image:alt", album.title),
    discovery,
  ]}`;
}
