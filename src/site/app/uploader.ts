import { Hono } from "hono";
import { html } from "hono/html";
import type { AppEnv } from "../../env";
import { TUS_CLIENT_PATH, UPLOADER_MAIN, UPLOADER_STYLE } from "../uploader-page";
import { dashboardPage, signedInPage } from "./layout";

/**
 * /app/upload: the site's uploader, signed in. uploader.js finds the session's CSRF token in the
 * page and sends through /app/api (tus for large files too) with no key to paste.
 */
export const uploaderRoutes = new Hono<AppEnv>().use("/app/upload", ...signedInPage).get("/app/upload", (c) =>
  dashboardPage(c, {
    title: "Upload",
    body: html`<h1>Upload</h1>${UPLOADER_MAIN}`,
    csrfToken: c.var.signIn.csrfToken,
    current: "/app/upload",
    head: html`<script src="${TUS_CLIENT_PATH}" defer></script><script src="/assets/uploader.js" defer></script>`,
    style: UPLOADER_STYLE,
  }),
);
