import { Hono } from "hono";
import { html } from "hono/html";
import { requestStores } from "../../deps";
import type { AppEnv } from "../../env";
import { linkSigning, publicOrigin } from "../../http/request-info";
import type { UploadRow } from "../../model/schema";
import { albumUrl, getOwnedAlbum, presentAlbum } from "../../uploads/albums/albums";
import { albumUploadsOf, listAlbums } from "../../uploads/albums/lists";
import { presentThumb } from "../../uploads/present";
import { ID_PATTERN } from "../../uploads/schemas/fields";
import { placeholderPaint } from "../placeholder-paint";
import { uploadTitle } from "../previews";
import { apiForm, notFoundPage, orNotFound, passwordForm, selectOptions } from "./forms";
import { dashboardPage, signedInPage } from "./layout";

const VISIBILITY_NAMES = {
  unlisted: "Unlisted: anyone with the link",
  public: "Public: listed with the public albums",
  private: "Private",
};

/** The album's own fields, as POST and PATCH /api/albums take them. */
const albumFields = (album?: {
  title: string | null;
  description: string | null;
  visibility: string;
  acceptsUploads: boolean;
}) =>
  html`<label for="title">Title</label>\
<input type="text" id="title" name="title" maxlength="90" required value="${album?.title ?? ""}">
<label for="description">Description</label>\
<textarea id="description" name="description" maxlength="500" rows="2">${album?.description ?? ""}</textarea>
<label for="visibility">Visibility</label><select id="visibility" name="visibility">\
${selectOptions(VISIBILITY_NAMES, album?.visibility ?? "unlisted")}</select>
<input type="hidden" name="accepts_uploads" value="false">
<label class="check">\
<input type="checkbox" name="accepts_uploads" value="true"${album?.acceptsUploads ? " checked" : ""}> \
The upload-only key may upload into it</label>`;

const STYLE = `
ol.order{list-style:none;padding:0;display:grid;grid-template-columns:repeat(auto-fill,minmax(140px,1fr));
gap:var(--gap)}
ol.order li{border:1px solid var(--line);border-radius:var(--radius);padding:.5rem;background:var(--surface);
cursor:grab}
ol.order li:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
ol.order img,ol.order .nothumb{width:100%;height:auto;aspect-ratio:1;object-fit:cover;margin:0;
border-radius:calc(var(--radius) / 2)}
ol.order form{margin:.25rem 0 0}ol.order button{font-size:.85rem;padding:.25rem .5rem}
ul.albums{list-style:none;padding:0}ul.albums li{padding:.5rem 0;border-bottom:1px solid var(--line)}`;

const NO_PREVIEW = html`<span class="nothumb">No preview</span>`;

/** An upload in the album's order: draggable, and moved by keyboard once focused. */
async function orderItem(albumId: string, row: UploadRow, origin: string, signing: ReturnType<typeof linkSigning>) {
  const thumb = await presentThumb(row, origin, signing);
  const title = uploadTitle(row);
  return html`<li data-id="${row.id}" draggable="true" tabindex="0" aria-label="${title}">\
${thumb ? html`<img src="${thumb}" alt="" loading="lazy"${placeholderPaint(row)}>` : NO_PREVIEW}
<a href="/app/uploads/${row.id}">${title}</a>
<form data-api="DELETE /albums/${albumId}/uploads/${row.id}"><button type="submit">Take out</button>\
<span class="problem" role="alert"></span></form></li>`;
}

/** /app/albums and /app/albums/{id}: the account's albums, each to change, order and share. */
export const albumRoutes = new Hono<AppEnv>()
  .use("/app/albums", ...signedInPage)
  .use("/app/albums/*", ...signedInPage)
  .get("/app/albums", async (c) => {
    const origin = publicOrigin(c);
    const { rows } = await listAlbums(requestStores(c), c.var.caller.accountId, { page: 1 });
    const items = rows.map(
      ({ album, uploadCount }) =>
        html`<li><a href="/app/albums/${album.id}">${album.title ?? "Untitled album"}</a> · ${uploadCount} uploads · \
${album.visibility}${album.passwordHash ? " · locked" : ""} · <a href="${albumUrl(origin, album.id)}">its page</a>\
</li>`,
    );
    const body = html`<h1>Albums</h1>
${items.length ? html`<ul class="albums">${items}</ul>` : html`<p>No albums yet.</p>`}
${apiForm({
  api: "POST /albums",
  heading: "A new album",
  fields: albumFields(),
  submit: "Create the album",
  next: "/app/albums/{id}",
})}`;
    return dashboardPage(c, {
      title: "Albums",
      body,
      csrfToken: c.var.signIn.csrfToken,
      current: "/app/albums",
      style: STYLE,
    });
  })
  .get("/app/albums/:id", async (c) => {
    const deps = requestStores(c);
    const { accountId } = c.var.caller;
    const id = c.req.param("id");
    const found = ID_PATTERN.test(id) ? await orNotFound(getOwnedAlbum(deps, accountId, id)) : null;
    if (!found) return notFoundPage(c, "No album with that id on this account.");
    const origin = publicOrigin(c);
    const signing = linkSigning(c);
    const [shown, listed] = await Promise.all([
      presentAlbum(found, origin, signing),
      albumUploadsOf(deps, accountId, id, { page: 1 }),
    ]);
    const { album } = found;
    const items = await Promise.all(listed.rows.map((row) => orderItem(id, row, origin, signing)));
    const covers = Object.fromEntries([["", "No cover"], ...listed.rows.map((row) => [row.id, uploadTitle(row)])]);
    const title = album.title ?? "Untitled album";
    const body = html`<h1>${title}</h1>
<div class="share"><label for="album-link">Its page</label><span><input id="album-link" readonly value="${shown.url}">\
<button type="button" data-copy="album-link">Copy</button></span></div>
<section aria-labelledby="order-heading"><h2 id="order-heading">Its uploads, in order</h2>
<p id="order-help">Drag an upload to move it, or focus one (Tab) and press Alt+Up or Alt+Down. \
The order is saved at once.</p>
${
  items.length
    ? html`<ol class="order" data-order="/albums/${id}/uploads" aria-describedby="order-help">${items}</ol>`
    : html`<p>No uploads in it yet.</p>`
}
<p id="order-said" role="status" aria-live="polite"></p>
${
  listed.meta.next_cursor
    ? html`<p>The first ${listed.rows.length} of ${listed.meta.total} are shown; \
the rest follow them.</p>`
    : ""
}
</section>
${apiForm({
  api: `POST /albums/${id}/uploads`,
  heading: "Add uploads",
  fields: html`<label for="add-uploads">Upload ids, separated by spaces or commas</label>\
<input type="text" id="add-uploads" name="uploads" required spellcheck="false">`,
  submit: "Add them",
})}
${apiForm({ api: `PATCH /albums/${id}`, heading: "Details", fields: albumFields(album), submit: "Save details" })}
${apiForm({
  api: `PATCH /albums/${id}`,
  heading: "Cover",
  fields: html`<label for="cover">Cover</label>\
<select id="cover" name="cover">${selectOptions(covers, shown.cover_id ?? "")}</select>`,
  submit: "Save the cover",
})}
${passwordForm(`PATCH /albums/${id}`, shown.locked)}
${apiForm({
  api: `DELETE /albums/${id}`,
  heading: "Delete the album",
  fields: html`<p>Its uploads stay.</p>`,
  submit: "Delete the album",
  confirm: "Delete this album? Its uploads stay.",
  next: "/app/albums",
})}`;
    return dashboardPage(c, { title, body, csrfToken: c.var.signIn.csrfToken, current: "/app/albums", style: STYLE });
  });
