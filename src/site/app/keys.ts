import { Hono } from "hono";
import { html } from "hono/html";
import type { AppEnv } from "../../env";
import { apiForm } from "./forms";
import { dashboardPage, signedInPage } from "./layout";

/**
 * /app/keys: the account's two keys. The service keeps only their hashes, so a key is shown once,
 * as it is made: rotating one (POST /api/keys/rotate) shows the new one, with the tools'
 * configurations filled in with it, and the old one stops working at once.
 */
const rotate = (kind: "full" | "upload", what: string) =>
  apiForm({
    api: "POST /keys/rotate",
    heading: kind === "full" ? "Full key" : "Upload-only key",
    fields: html`<p>${what}</p><input type="hidden" name="kind" value="${kind}">`,
    submit: kind === "full" ? "Make a new full key" : "Make a new upload-only key",
    shows: "key",
    confirm: `The ${kind === "full" ? "full" : "upload-only"} key in use now will stop working at once. Go on?`,
  });

const newKey = html`<section id="new-key" aria-labelledby="new-key-heading" hidden>
<h2 id="new-key-heading">Your new key</h2>
<p>Shown this once: the service keeps only its hash. Copy it now, or take it in a tool's configuration.</p>
<div class="share"><label for="new-key-value">Key</label><span><input id="new-key-value" readonly>\
<button type="button" data-copy="new-key-value">Copy</button></span></div>
<ul>
<li><a data-config="shareX" download="sharex.sxcu" href="#">ShareX uploader (.sxcu)</a></li>
<li><a data-config="picGo" download="picgo-config.json" href="#">PicGo configuration (web-uploader plugin)</a></li>
<li><a data-config="uPic" download="uPic_hosts.json" href="#">uPic custom host</a></li>
</ul>
<label for="typora">Typora: Preferences, Image, Upload Service "Custom Command"</label>
<textarea id="typora" data-config="typora" rows="3" readonly></textarea>
<label for="shell">Flameshot, or any shell</label><textarea id="shell" data-config="shell" rows="3" readonly></textarea>
</section>`;

export const keyRoutes = new Hono<AppEnv>().use("/app/keys", ...signedInPage).get("/app/keys", (c) => {
  const body = html`<h1>Keys</h1>
<p>Tools and scripts use a key; this dashboard does not need one. The full key may do everything
the API allows; the upload-only key may only upload, which is what a screenshot tool should hold.</p>
${newKey}
${rotate("upload", "For ShareX, PicGo and other uploaders. A new one is the way to see one again.")}
${rotate("full", "For scripts that list, change and delete uploads. Every tool holding the old one stops working.")}`;
  return dashboardPage(c, {
    title: "Keys",
    body,
    csrfToken: c.var.signIn.csrfToken,
    current: "/app/keys",
    head: html`<script src="/assets/client-configs.js" defer></script>`,
  });
});
