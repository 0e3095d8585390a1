import { html } from "hono/html";
import TUS_CLIENT_SCRIPT from "tus-js-client/dist/tus.min.js";
import { version as TUS_CLIENT_VERSION } from "tus-js-client/package.json";
import type { Markup } from "./html";

/**
 * The browser uploader (/upload): the key is kept in this browser's localStorage only, files
 * come by drag and drop, the file picker or a paste, each with a progress bar; files over 90 MB
 * go over tus (/api/tus), resumed after a dropped connection or a reload; the next uploads may go
 * into an album (picked or made with a full key, typed as an id of an album that accepts uploads with an
 * upload-only key). All behaviour is
 * /assets/uploader.js, with tus-js-client's browser build: the page itself runs no inline script.
 * A backslash at the end of a line joins it to the next: the markup has no line break there.
 */
const KEY_SECTION = html`<section aria-labelledby="key-heading">
<h2 id="key-heading">Your API key</h2>
<p><label for="key">Full or upload-only key</label><br>
<input id="key" type="password" autocomplete="off" spellcheck="false" size="40"></p>
<p><label><input id="remember" type="checkbox"> Remember it in this browser</label>
<button type="button" id="forget">Forget it</button></p>
</section>`;

/** The options, the files and their progress, and the account's uploads and albums. */
export const UPLOADER_MAIN: Markup = html`<section aria-labelledby="options-heading">
<h2 id="options-heading">Options</h2>
<p><label for="title">Title</label><br><input id="title" maxlength="100" size="40"></p>
<p><label for="visibility">Visibility</label><br><select id="visibility">
<option value="unlisted">Unlisted: anyone with the link</option>
<option value="public">Public: listed in the gallery</option>
<option value="private">Private</option></select></p>
<p><label for="expiry">Delete after</label><br><select id="expiry">
<option value="">Never</option><option value="3600">1 hour</option><option value="86400">1 day</option>
<option value="604800">1 week</option><option value="2592000">30 days</option></select></p>
<p><label><input id="keep-original" type="checkbox"> Keep the original file (no conversion to WebP)</label></p>
<p id="album-pick" hidden><label for="album">Album</label><br><select id="album"><option value="">None</option></select>
<br><input id="album-new" maxlength="100" size="24" aria-label="New album's title" placeholder="New album's title">
<button type="button" id="album-create">Create album</button> <span id="album-said" aria-live="polite"></span></p>
<p id="album-typed" hidden><label for="album-id">Album id (optional: the end of its /a/ link; \
the album must accept uploads)</label><br>
<input id="album-id" size="16" maxlength="10" spellcheck="false" autocomplete="off"></p>
</section>
<section aria-labelledby="files-heading">
<h2 id="files-heading">Files</h2>
<p id="usage" aria-live="polite" hidden></p>
<div id="drop" class="drop" role="group" aria-labelledby="drop-help">
<p id="drop-help">Drop images or videos here, paste them, or <label for="files" class="pick">choose files</label>.</p>
<input id="files" type="file" multiple accept="image/*,video/*">
</div>
<ol id="results" class="results" aria-live="polite"></ol>
</section>
<section id="mine" aria-labelledby="mine-heading" hidden>
<h2 id="mine-heading">Your uploads</h2>
<ol id="mine-list" class="results"></ol>
<p><button type="button" id="mine-more" hidden>More</button></p>
</section>
<section id="albums" aria-labelledby="albums-heading" hidden>
<h2 id="albums-heading">Your albums</h2>
<ol id="albums-list" class="results"></ol>
<p><button type="button" id="albums-more" hidden>More</button></p>
</section>`;

const TOOLS_SECTION = html`<section aria-labelledby="tools-heading">
<h2 id="tools-heading">Screenshot and writing tools</h2>
<p>With your key entered above (an upload-only key is best: it can upload and nothing else):</p>
<p><button type="button" id="sxcu">Download a ShareX uploader (.sxcu)</button></p>
<p><button type="button" id="picgo">Download a PicGo configuration (web-uploader plugin)</button></p>
<p><button type="button" id="upic">Download a uPic custom host (import it in uPic's hosts)</button></p>
<p><label for="typora">Typora: Preferences, Image, Upload Service "Custom Command"</label><br>
<textarea id="typora" rows="4" cols="60" readonly></textarea><br>
<button type="button" data-copy="typora">Copy</button></p>
<p><label for="snippet">Flameshot, or any shell (answers with the file's link)</label><br>
<textarea id="snippet" rows="4" cols="60" readonly></textarea><br>
<button type="button" data-copy="snippet">Copy</button></p>
<p>Tools made for Chevereto or Lsky Pro (PicGo and PicList plugins among them) work with the
address of this site and your key, and iOS Shortcuts with a few steps: see docs/clients.md in the
service's repository.</p>
</section>`;

export const UPLOADER_BODY: Markup = html`<main>
<h1>Upload</h1>
${KEY_SECTION}
${UPLOADER_MAIN}
${TOOLS_SECTION}
</main>`;

/** Inlined into the page (its CSP allows inline style, not script). */
export { default as UPLOADER_STYLE } from "./browser/uploader.css";

/**
 * tus-js-client's own browser build (the `tus` global), as the installed package has it: the Text
 * rule in wrangler.toml brings it in when the Worker is built, never a copy in this repository.
 * Its path names the package's version, so browsers and caches may keep it for good.
 */
export { TUS_CLIENT_SCRIPT };
export const TUS_CLIENT_PATH = `/assets/tus-js-client-${TUS_CLIENT_VERSION}.min.js`;
