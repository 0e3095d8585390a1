import { html } from "hono/html";
import { unrestricted } from "../model/policy";
import type { UploadRow } from "../model/schema";
import type { Markup } from "./html";
import { escapeAttribute, playerIframe, uploadTitle, type Links } from "./previews";

/** The ways to share an upload, as text a person copies: each link or snippet, by name. */
export function shareSnippets(row: UploadRow, links: Links, embed: string): { name: string; text: string }[] {
  const title = uploadTitle(row);
  const page = { name: "Page link", text: links.direct };
  // A locked or view-limited upload is shared by its page, which asks for the password or counts the view.
  if (!unrestricted.of(row)) return [page];
  const size = row.width && row.height ? ` width="${row.width}" height="${row.height}"` : "";
  if (row.type === "video") {
    return [
      { name: "Direct link", text: links.src },
      page,
      { name: "Markdown", text: `[${title.replace(/[[\]]/g, "")}](${links.direct})` },
      { name: "BBCode", text: `[url=${links.direct}]${title.replace(/[[\]]/g, "")}[/url]` },
      {
        name: "HTML embed",
        text: playerIframe(embed, title, row.width && row.height ? { width: row.width, height: row.height } : null),
      },
    ];
  }
  return [
    { name: "Direct link", text: links.src },
    page,
    { name: "Markdown", text: `![${title.replace(/[[\]]/g, "")}](${links.src})` },
    { name: "BBCode", text: `[url=${links.direct}][img]${links.src}[/img][/url]` },
    {
      name: "HTML embed",
      text: `<a href="${links.direct}"><img src="${links.src}" alt="${escapeAttribute(title)}"${size}></a>`,
    },
  ];
}

/**
 * The snippets as read-only fields, each with a copy button. The buttons are the page script's
 * (/assets/page.js); without it the fields can still be selected and copied by hand.
 */
export function shareOptions(snippets: { name: string; text: string }[]): Markup {
  const fields = snippets.map(({ name, text }, i) => {
    const id = `share-${i}`;
    const input = html`<input id="${id}" readonly value="${text}">`;
    const button = html`<button type="button" data-copy="${id}">Copy</button>`;
    return html`<div class="share"><label for="${id}">${name}</label><span>${input}${button}</span></div>`;
  });
  return html`<section aria-labelledby="share-heading"><h2 id="share-heading">Share</h2>${fields}</section>`;
}
