import { Hono } from "hono";
import { html } from "hono/html";
import { z } from "zod";
import { accountName } from "../../accounts/accounts";
import { requestStores } from "../../deps";
import type { AppEnv } from "../../env";
import { ApiError } from "../../errors";
import { linkSigning, publicOrigin } from "../../http/request-info";
import { MEDIA_TYPES, type UploadRow } from "../../model/schema";
import { VISIBILITIES } from "../../model/visibility";
import { listAlbums } from "../../uploads/albums/lists";
import { presentThumb, presentUpload } from "../../uploads/present";
import { uploadLinks } from "../../uploads/public-urls";
import { readOwnedUpload } from "../../uploads/read";
import { searchPage, type UploadFilters } from "../../uploads/search";
import { ID_PATTERN } from "../../uploads/schemas/fields";
import type { Markup } from "../html";
import { placeholderPaint } from "../placeholder-paint";
import { GRID_STYLE, tileShape } from "../tiles";
import { uploadTitle } from "../previews";
import { shareOptions, shareSnippets } from "../share-options";
import { apiForm, notFoundPage, orNotFound, passwordForm, selectOptions } from "./forms";
import { dashboardPage, signedInPage } from "./layout";

/** The grid's query: what the search form sends. An empty field is no filter. */
const gridQuery = z.object({
  q: z.string().trim().max(100, "Search: at most 100 characters.").optional(),
  type: z.enum(["", ...MEDIA_TYPES], { message: "Type: image or video." }).optional(),
  visibility: z.enum(["", ...VISIBILITIES], { message: "Visibility: public, unlisted or private." }).optional(),
  album: z.union([z.literal(""), z.string().regex(ID_PATTERN, "Album: not an album id.")]).optional(),
  after: z.string().max(600).optional(),
});

const filtersOf = (query: z.output<typeof gridQuery>): UploadFilters => ({
  title: query.q || undefined,
  type: query.type || undefined,
  visibility: query.visibility || undefined,
  album: query.album || undefined,
});

/** A tile of the grid, as the gallery's are (each photo its own shape), with its marks. */
async function gridTile(row: UploadRow, origin: string, signing: ReturnType<typeof linkSigning>): Promise<Markup> {
  const thumb = await presentThumb(row, origin, signing);
  const title = uploadTitle(row);
  const picture = thumb
    ? html`<img src="${thumb}" alt="" loading="lazy"${placeholderPaint(row)}>`
    : html`<span class="nothumb">${row.type === "video" ? "Video" : "No preview"}</span>`;
  const marks = [row.visibility, row.passwordHash ? "locked" : null, row.type === "video" ? "video" : null];
  return html`<li style="${tileShape(row)}"><a href="/app/uploads/${row.id}">${picture}\
<span class="caption">${title}<small>${marks.filter(Boolean).join(" · ")}</small></span></a></li>`;
}

const UPLOADS_STYLE = `${GRID_STYLE}
form.search{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:end}
form.search p{margin:0}form.search input{width:14rem}
.upload img{max-height:60vh;width:auto;cursor:crosshair}`;

const NONE_YET = html`No uploads yet: <a href="/app/upload">upload some</a>.`;
const VISIBILITY_CHOICES = {
  public: "Public: listed in the gallery",
  unlisted: "Unlisted: anyone with the link",
  private: "Private",
};
const EXPIRY_CHOICES = {
  "": "Never",
  "3600": "In an hour",
  "86400": "In a day",
  "604800": "In a week",
  "2592000": "In 30 days",
};

const typeNames = { "": "Any type", image: "Images", video: "Videos" };
const visibilityNames = { "": "Any visibility", public: "Public", unlisted: "Unlisted", private: "Private" };

/** /app and /app/uploads/{id}: the account's uploads, and each one's page. */
export const uploadRoutes = new Hono<AppEnv>()
  .use("/app", ...signedInPage)
  .use("/app/uploads/*", ...signedInPage)
  .get("/app", async (c) => {
    const deps = requestStores(c);
    const { accountId } = c.var.caller;
    const asked = gridQuery.safeParse(c.req.query());
    const query = asked.success ? asked.data : {};
    const [name, { rows: albums }] = await Promise.all([
      accountName(c.var.db, accountId),
      listAlbums(deps, accountId, { page: 1 }),
    ]);
    let problem = asked.success ? null : asked.error.issues.map((issue) => issue.message).join(" ");
    let found: Awaited<ReturnType<typeof searchPage>> = { rows: [], page: 1, next: null };
    if (!problem) {
      try {
        found = await searchPage(deps, accountId, filtersOf(query), query.after || undefined);
      } catch (error) {
        // A cursor or album that is not this account's: said on the page, as a bad filter is.
        if (!(error instanceof ApiError)) throw error;
        problem = error.message;
      }
    }
    const origin = publicOrigin(c);
    const tiles = await Promise.all(found.rows.map((row) => gridTile(row, origin, linkSigning(c))));
    const filters = new URLSearchParams(
      Object.entries({ q: query.q, type: query.type, visibility: query.visibility, album: query.album }).filter(
        (entry): entry is [string, string] => Boolean(entry[1]),
      ),
    );
    const next = found.next ? `/app?${new URLSearchParams([...filters, ["after", found.next]])}` : null;
    const albumChoices = Object.fromEntries([
      ["", "Any album"],
      ...albums.map((a) => [a.album.id, a.album.title ?? "Untitled album"]),
    ]);
    const body = html`<h1>Uploads</h1>
<p>Signed in as ${name}.</p>
<form class="search" method="get" action="/app" role="search">
<p><label for="q">Title</label><input type="search" id="q" name="q" maxlength="100" value="${query.q ?? ""}"></p>
<p><label for="type">Type</label>\
<select id="type" name="type">${selectOptions(typeNames, query.type ?? "")}</select></p>
<p><label for="visibility">Visibility</label><select id="visibility" name="visibility">\
${selectOptions(visibilityNames, query.visibility ?? "")}</select></p>
<p><label for="album">Album</label>\
<select id="album" name="album">${selectOptions(albumChoices, query.album ?? "")}</select></p>
<p><button type="submit">Search</button></p>
</form>
${problem ? html`<p class="problem" role="alert">${problem}</p>` : ""}
${
  tiles.length
    ? html`<ul class="grid" aria-label="Uploads">${tiles}</ul>`
    : html`<p>${problem ? "" : found.page > 1 || filters.size ? "Nothing more matches." : NONE_YET}</p>`
}
<nav aria-label="Pages" class="pages">${found.page > 1 ? html`<a href="/app?${filters}">First page</a>` : ""}\
${next ? html`<a rel="next" href="${next}">More</a>` : ""}</nav>`;
    return dashboardPage(c, {
      title: "Uploads",
      body,
      csrfToken: c.var.signIn.csrfToken,
      current: "/app",
      style: UPLOADS_STYLE,
      status: problem ? 422 : 200,
    });
  })
  .get("/app/uploads/:id", async (c) => {
    const deps = requestStores(c);
    const id = c.req.param("id");
    const row = ID_PATTERN.test(id) ? await orNotFound(readOwnedUpload(deps, c.var.caller.accountId, id)) : null;
    if (!row) return notFoundPage(c, "No upload with that id on this account.");
    const origin = publicOrigin(c);
    const shown = await presentUpload(row, origin, linkSigning(c));
    const links = uploadLinks(origin, row);
    const title = uploadTitle(row);
    const focal = shown.focal ? `${shown.focal.x},${shown.focal.y}` : "";
    const picture = shown.thumb
      ? html`<img src="${row.type === "image" && !row.passwordHash ? links.src : shown.thumb}" alt="${title}" \
data-focal-picker width="${row.width ?? ""}" height="${row.height ?? ""}"${placeholderPaint(row)}>`
      : html`<p>No preview yet.</p>`;
    const expiry = shown.expires_at
      ? html`Deleted at ${shown.expires_at.replace("T", " ").slice(0, 16)} UTC.`
      : "No expiry.";
    const body = html`<h1>${title}</h1>
<div class="upload">${picture}<p>\
<a href="${links.direct}">Its page</a> · ${row.type} · ${row.width ?? "?"}×${row.height ?? "?"} · \
${row.size} bytes · ${row.visibility}${row.passwordHash ? " · locked" : ""}</p></div>
${apiForm({
  api: `PATCH /${row.id}`,
  heading: "Details",
  fields: html`<label for="title">Title</label>\
<input type="text" id="title" name="title" maxlength="90" value="${row.title ?? ""}">
<label for="description">Description</label>\
<textarea id="description" name="description" maxlength="500" rows="3">${row.description ?? ""}</textarea>
<label for="visibility">Visibility</label><select id="visibility" name="visibility">\
${selectOptions(VISIBILITY_CHOICES, row.visibility)}</select>
${
  row.type === "image"
    ? html`<label for="focal">Focal point (x,y from 0 to 1; click the image to set it)</label>\
<input type="text" id="focal" name="focal" value="${focal}" placeholder="none" spellcheck="false">`
    : ""
}`,
  submit: "Save details",
})}
${passwordForm(`PATCH /${row.id}`, row.passwordHash !== null)}
${apiForm({
  api: `PATCH /${row.id}`,
  heading: "View limit",
  fields: html`<p>${row.maxViews === null ? "No limit." : html`${row.views ?? 0} of ${row.maxViews} views used.`}</p>
<label for="max_views">Views allowed (empty: no limit; setting it starts the count afresh)</label>\
<input type="number" id="max_views" name="max_views" min="1" max="1000000" value="${row.maxViews ?? ""}">`,
  submit: "Save the limit",
})}
${apiForm({
  api: `PATCH /${row.id}`,
  heading: "Expiry",
  fields: html`<p>${expiry}</p><label for="expires_in">Delete it</label><select id="expires_in" name="expires_in">\
${selectOptions(EXPIRY_CHOICES, "")}</select>`,
  submit: "Save the expiry",
})}
${apiForm({
  api: `POST /${row.id}/replace`,
  heading: "Replace the file",
  fields: html`<p>The links stay; the new file takes the old one's place.</p>\
<label for="replacement">File</label>\
<input type="file" id="replacement" name="uploads" required accept="image/*,video/*">`,
  submit: "Replace",
})}
${shareOptions(shareSnippets(row, links, `${origin}/e/${row.id}`))}
${apiForm({
  api: `DELETE /${row.id}`,
  heading: "Delete",
  fields: html`<p>The upload, its files and its links go for good.</p>`,
  submit: "Delete this upload",
  confirm: "Delete this upload for good?",
  next: "/app",
})}`;
    return dashboardPage(c, { title, body, csrfToken: c.var.signIn.csrfToken, current: "/app", style: UPLOADS_STYLE });
  });
