import { Hono } from "hono";
import { requestDeps } from "../deps";
import type { AppEnv } from "../env";
import { notFound } from "../errors";
import { publicOrigin } from "../http/request-info";
import { findUpload, findUploadRecord } from "../storage/uploads";
import { uploadLinks } from "../uploads/links";
import { removeUploadByToken, uploadForDeleteLink } from "../uploads/remove";
import { escapeHtml, page, PAGE_HEADERS } from "./html";
import { methodNotAllowed } from "./method-not-allowed";

const deps = requestDeps;

export const pages = new Hono<AppEnv>()
  /**
   * The upload's page. A private upload has no page for visitors: the link leads to the file
   * (the spec's "sends everyone except the owner straight to the file"; the API has no owner
   * session on pages, so everyone is sent).
   */
  .get("/v/:id", async (c) => {
    const row = await findUpload(c.var.db, c.req.param("id"), c.var.now());
    if (!row) {
      const record = await findUploadRecord(c.var.db, c.req.param("id"));
      if (record?.expiresAt != null && record.expiresAt <= c.var.now()) {
        const body = "<h1>This upload has expired</h1><p>It was set to be deleted automatically, and it has been.</p>";
        return c.body(page({ title: "Expired", head: '<meta name="robots" content="noindex">', body }), 410, PAGE_HEADERS);
      }
      throw notFound("No such upload.");
    }
    const links = uploadLinks(publicOrigin(c), row);
    if (row.visibility === "private") return c.redirect(links.src, 302);
    const title = escapeHtml(row.title ?? "Untitled upload");
    const media =
      row.type === "video"
        ? `<video controls preload="metadata" src="${escapeHtml(links.src)}"></video>`
        : `<img src="${escapeHtml(links.src)}" alt="${title}">`;
    const ogType = row.type === "video" ? "og:video" : "og:image";
    const head = [
      row.visibility === "public" ? "" : '<meta name="robots" content="noindex">',
      `<meta property="og:title" content="${title}">`,
      `<meta property="${ogType}" content="${escapeHtml(links.src)}">`,
      row.description ? `<meta property="og:description" content="${escapeHtml(row.description)}">` : "",
    ].join("\n");
    const body = `<h1>${title}</h1>
${media}
${row.description ? `<p>${escapeHtml(row.description)}</p>` : ""}
<p><a href="${escapeHtml(links.src)}">Direct link</a></p>`;
    return c.body(page({ title, head, body }), 200, {
      ...PAGE_HEADERS,
      ...(row.visibility === "public" ? {} : { "X-Robots-Tag": "noindex" }),
    });
  })
  .all("/v/:id", methodNotAllowed("GET"))
  /** delete_url: GET only asks (link previews and prefetchers must not delete); POST or DELETE deletes. */
  .get("/d/:id/:token", async (c) => {
    const row = await uploadForDeleteLink(deps(c), c.req.param("id"), c.req.param("token"));
    const body = `<h1>Delete this upload?</h1>
<p>This permanently deletes ${escapeHtml(row.title ? `“${row.title}”` : `upload ${row.id}`)}. It cannot be undone.</p>
<form method="post"><button type="submit">Delete permanently</button></form>`;
    return c.body(page({ title: "Delete upload", head: '<meta name="robots" content="noindex">', body }), 200, PAGE_HEADERS);
  })
  .on(["POST", "DELETE"], "/d/:id/:token", async (c) => {
    await removeUploadByToken(deps(c), c.req.param("id"), c.req.param("token"));
    if (c.req.method === "POST" && (c.req.header("Accept") ?? "").includes("text/html")) {
      return c.body(page({ title: "Deleted", body: "<h1>Deleted</h1><p>The upload was deleted.</p>" }), 200, PAGE_HEADERS);
    }
    return c.json({ type: "success" as const, msg: "Deleted." as const });
  })
  .all("/d/:id/:token", methodNotAllowed("GET", "POST", "DELETE"));
