// @ts-check
/*
 * The pages' one script, served from the site itself (/assets/page.js) so that the pages' CSP
 * allows no inline script: copy buttons for the share fields, and placeholders taken away.
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
document.addEventListener(
  "load",
  (event) => {
    const target = event.target;
    if (target instanceof HTMLImageElement && target.hasAttribute("data-placeholder")) unpaint(target);
  },
  true,
);
// Those loaded before this deferred script ran.
for (const image of document.querySelectorAll("img[data-placeholder]")) {
  if (image instanceof HTMLImageElement && image.complete && image.naturalWidth > 0) unpaint(image);
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
