// @ts-check
/*
 * The pages' one script, served from the site itself (/assets/page.js) so that the pages' CSP
 * allows no inline script: copy buttons for the share fields, placeholders taken away, and images
 * whose width variant failed shown from their file.
 */
"use strict";

/**
 * An image's placeholder (painted behind it by its inline style, src/site/placeholder-paint.ts) is
 * taken away once the image has loaded, so that none shows through its transparent parts.
 * @param {HTMLElement} element
 */
const unpaint = (element) => {
  element.style.background = "";
  element.removeAttribute("data-placeholder");
};
/**
 * A width variant is made the first time it is asked for, and answered 503 while the media service
 * cannot make it (src/uploads/variants/make.ts): an image showing one would stay broken. Its src,
 * the file itself, is always served; without the srcset the browser loads that instead.
 * @param {HTMLImageElement} image
 */
const fallBack = (image) => {
  image.removeAttribute("srcset");
  image.removeAttribute("sizes");
};
/**
 * `handle` for an image whose `type` event comes while it has `attribute` (load and error do not
 * bubble: they are caught on their way down).
 * @param {"load" | "error"} type
 * @param {string} attribute
 * @param {(image: HTMLImageElement) => void} handle
 */
const onImage = (type, attribute, handle) =>
  document.addEventListener(
    type,
    (event) => {
      const target = event.target;
      if (target instanceof HTMLImageElement && target.hasAttribute(attribute)) handle(target);
    },
    true,
  );
onImage("load", "data-placeholder", unpaint);
onImage("error", "srcset", fallBack);
// Those loaded, or broken, before this deferred script ran.
for (const image of document.querySelectorAll("img[data-placeholder], img[srcset]")) {
  if (!(image instanceof HTMLImageElement) || !image.complete) continue;
  if (image.naturalWidth > 0) {
    if (image.hasAttribute("data-placeholder")) unpaint(image);
  } else if (image.hasAttribute("srcset")) fallBack(image);
}
document.addEventListener("click", async (event) => {
  /** @type {HTMLButtonElement | null} */
  const button = event.target instanceof Element ? event.target.closest("button[data-copy]") : null;
  if (!button) return;
  const id = /** @type {string} */ (button.dataset.copy);
  const field = /** @type {HTMLInputElement | HTMLTextAreaElement | null} */ (document.getElementById(id));
  if (!field) return;
  try {
    await navigator.clipboard.writeText(field.value);
  } catch {
    field.select();
    document.execCommand("copy");
  }
  button.textContent = "Copied";
  button.setAttribute("aria-live", "polite");
  setTimeout(() => {
    button.textContent = "Copy";
  }, 2000);
});
