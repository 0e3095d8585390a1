import { ApiError, badRequest, notFound, unauthorized } from "../errors";
import { embeddable } from "../model/policy";
import type { UploadRow } from "../model/schema";
import { playerIframe, thumbnailSize, uploadTitle, type Links } from "./previews";
import { fittingVariant } from "./responsive-images";

/**
 * oEmbed 1.0 (https://oembed.com) for upload pages: `photo` for an image, `video` for a video
 * (an iframe of its player page). Only what a link preview may show is answered: a private,
 * locked or view-limited upload is a 401, as the oEmbed spec has it for what is not public.
 */
export interface OembedRequest {
  /** An upload's page or file, or an album's page. */
  kind: "upload" | "album";
  id: string;
  maxWidth: number | null;
  maxHeight: number | null;
}

const positive = (value: string | undefined, name: string) => {
  if (value === undefined || value === "") return null;
  if (!/^[1-9]\d{0,5}$/.test(value)) throw badRequest(`${name} must be a positive whole number of pixels.`);
  return Number(value);
};

/** The upload a request asks about: `url` is its page (or its `src`) on this site. */
export function readOembedRequest(query: Record<string, string | undefined>, origin: string): OembedRequest {
  if ((query.format ?? "json") !== "json") throw new ApiError(501, "Only format=json is answered.");
  if (!query.url) throw badRequest("url: the upload or album page to embed is required.");
  let url: URL;
  try {
    url = new URL(query.url);
  } catch {
    throw badRequest("url must be an absolute URL of an upload page.");
  }
  const match = /^\/([via])\/([0-9A-Za-z]{1,32})$/.exec(url.pathname);
  if (url.origin !== origin || !match) throw notFound(`url is not an upload or album page of ${origin}.`);
  return {
    kind: match[1] === "a" ? "album" : "upload",
    id: match[2]!,
    maxWidth: positive(query.maxwidth, "maxwidth"),
    maxHeight: positive(query.maxheight, "maxheight"),
  };
}

/** `width` x `height` scaled down to fit the bounds, never up. */
function fitWithin(width: number, height: number, maxWidth: number | null, maxHeight: number | null) {
  const scale = Math.min(1, maxWidth ? maxWidth / width : 1, maxHeight ? maxHeight / height : 1);
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

const fits = (size: { width: number; height: number }, maxWidth: number | null, maxHeight: number | null) =>
  (!maxWidth || size.width <= maxWidth) && (!maxHeight || size.height <= maxHeight);

export function oembedAnswer(
  row: UploadRow,
  links: Links,
  request: OembedRequest,
  site: { name: string; url: string; embed: string },
) {
  if (!embeddable(row)) {
    throw unauthorized("This upload is not public enough to embed: it is private, password-protected or view-limited.");
  }
  const title = uploadTitle(row);
  const thumb = thumbnailSize(row);
  const common = {
    version: "1.0",
    title,
    provider_name: site.name,
    provider_url: site.url,
    ...(links.thumb &&
      thumb && { thumbnail_url: links.thumb, thumbnail_width: thumb.width, thumbnail_height: thumb.height }),
  };
  const { maxWidth, maxHeight } = request;
  if (row.type === "video") {
    const size = fitWithin(row.width ?? 640, row.height ?? 360, maxWidth, maxHeight);
    return { ...common, type: "video", html: playerIframe(site.embed, title, size), ...size };
  }
  if (!row.width || !row.height) throw notFound("This image has no known size to embed.");
  const full = { width: row.width, height: row.height };
  // A photo's url must be an image of the size given: the file when it fits, else the wider of
  // the widest variant that fits and the thumbnail.
  if (fits(full, maxWidth, maxHeight)) return { ...common, type: "photo", url: links.src, ...full };
  const smaller = [fittingVariant(row, links.src, maxWidth, maxHeight)];
  if (links.thumb && thumb && fits(thumb, maxWidth, maxHeight)) smaller.push({ url: links.thumb, ...thumb });
  const widest = smaller.reduce((a, b) => (b && (!a || b.width > a.width) ? b : a), null);
  if (widest) return { ...common, type: "photo", ...widest };
  throw notFound("No image of this upload fits maxwidth and maxheight.");
}

/**
 * An album's oEmbed answer: a `link` (oEmbed 1.0, 2.3.4.3: a page, not something to embed
 * inline), with its cover's thumbnail when it has one and it fits the bounds. Only for an album
 * whose page anyone with the link sees: a locked album is a 401, as its page is the password form
 * (which says no more than that it is locked). A private album never gets here: it is a 404, as
 * an unknown one is, like its page.
 */
export function albumOembedAnswer(
  album: { title: string; locked: boolean },
  cover: { row: UploadRow; thumb: string | null } | null,
  request: OembedRequest,
  site: { name: string; url: string },
) {
  if (album.locked) throw unauthorized("This album is not public enough to embed: it is password-protected.");
  const thumb = cover?.thumb ? thumbnailSize(cover.row) : null;
  const shown = cover?.thumb && thumb && fits(thumb, request.maxWidth, request.maxHeight);
  return {
    version: "1.0",
    type: "link",
    title: album.title,
    provider_name: site.name,
    provider_url: site.url,
    ...(shown && { thumbnail_url: cover.thumb, thumbnail_width: thumb.width, thumbnail_height: thumb.height }),
  };
}
