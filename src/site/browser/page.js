// @ts-check
/*
 * The pages' one script, served from the site itself (/assets/page.js) so that the pages' CSP
 * allows no inline script: copy buttons for the share fields.
 */
"use strict";
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
