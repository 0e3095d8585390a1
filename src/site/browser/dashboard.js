// @ts-check
/*
 * The dashboard's script (/assets/dashboard.js): its forms speak the API itself, as the signed-in
 * account, through /app/api (the API's own routes with the session in place of a key), so every
 * change goes through the same checks as an API client's, and a refusal is shown in the form in
 * the API's own words. Also: an album's uploads reordered by drag and drop or by keyboard, and a
 * rotated key shown once with the tools' configurations filled in with it.
 */
"use strict";

(() => {
  const csrfMeta = /** @type {HTMLMetaElement | null} */ (document.querySelector('meta[name="csrf-token"]'));
  const csrf = csrfMeta ? csrfMeta.content : "";

  /**
   * A call to the API as the signed-in account: its `data`, or an Error in the API's own words.
   * @param {string} method
   * @param {string} path the API's path, after /api
   * @param {BodyInit | null} body
   * @param {Record<string, string>} [headers]
   * @returns {Promise<any>}
   */
  async function api(method, path, body, headers) {
    const res = await fetch(`/app/api${path}`, {
      method,
      body,
      credentials: "same-origin",
      headers: Object.assign({ "X-CSRF-Token": csrf }, headers || {}),
    });
    const answer = await res.json().catch(() => null);
    if (!res.ok || !answer || answer.type === "error") {
      throw new Error((answer && answer.errors) || `The service answered ${res.status}.`);
    }
    return answer.data === undefined ? answer : answer.data;
  }

  /**
   * The form's fields as the API reads a form: multipart when it sends a file, else urlencoded.
   * Fields marked data-omit-empty are left out when empty (an empty value would clear them).
   * @param {HTMLFormElement} form
   */
  function bodyOf(form) {
    const data = new FormData(form);
    for (const field of form.querySelectorAll("[data-omit-empty]")) {
      const name = /** @type {HTMLInputElement} */ (field).name;
      if (name && data.get(name) === "") data.delete(name);
    }
    if (form.querySelector('input[type="file"]')) return data;
    const fields = new URLSearchParams();
    for (const [name, value] of data) if (typeof value === "string") fields.append(name, value);
    return fields;
  }

  /**
   * A form with data-api="METHOD /path": sent to the API; on success the page goes to data-next
   * ("{id}" there is the answer's id) or reloads, and a refusal is said in the form's
   * [role=alert]. data-confirm asks first.
   */
  document.addEventListener("submit", async (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.dataset.api) return;
    event.preventDefault();
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
    const [method, path] = form.dataset.api.split(" ");
    const status = form.querySelector("[role=alert]");
    const submit = /** @type {HTMLButtonElement | null} */ (
      form.querySelector("button[type=submit], button:not([type])")
    );
    if (status) status.textContent = "";
    if (submit) submit.disabled = true;
    try {
      const data = await api(/** @type {string} */ (method), /** @type {string} */ (path), bodyOf(form));
      if (form.dataset.shows === "key") return showKey(data);
      const next = form.dataset.next;
      if (next) location.assign(next.replace("{id}", data && data.id ? data.id : ""));
      else location.reload();
    } catch (error) {
      if (status) status.textContent = error instanceof Error ? error.message : String(error);
    } finally {
      if (submit) submit.disabled = false;
    }
  });

  // ---- Keys and secrets: shown once, a key with the tools' configurations that carry it. ----

  /**
   * A key or a webhook endpoint's secret, shown once in the page's #new-key.
   * @param {{ key?: string, secret?: string }} data
   */
  function showKey(data) {
    const shown = document.getElementById("new-key");
    const field = /** @type {HTMLInputElement | null} */ (document.getElementById("new-key-value"));
    if (!shown || !field) return;
    const key = data.key || data.secret || "";
    field.value = key;
    shown.hidden = false;
    const configs = /** @type {any} */ (window).clientConfigs;
    /** @param {string} name */
    const made = (name) => {
      const value = configs && configs[name] ? configs[name](location.origin, key, Date.now()) : "";
      return typeof value === "string" ? value : JSON.stringify(value, null, 2);
    };
    for (const link of shown.querySelectorAll("a[data-config]")) {
      const anchor = /** @type {HTMLAnchorElement} */ (link);
      anchor.href = URL.createObjectURL(
        new Blob([made(/** @type {string} */ (anchor.dataset.config))], { type: "application/json" }),
      );
    }
    for (const area of shown.querySelectorAll("textarea[data-config]")) {
      const text = /** @type {HTMLTextAreaElement} */ (area);
      text.value = made(/** @type {string} */ (text.dataset.config));
    }
    field.focus();
    field.select();
  }

  // ---- An image's focal point: a click on it fills the field with where it was, as x,y fractions. ----

  const picker = document.querySelector("img[data-focal-picker]");
  const focal = /** @type {HTMLInputElement | null} */ (document.getElementById("focal"));
  if (picker && focal) {
    picker.addEventListener("click", (event) => {
      if (!(event instanceof MouseEvent)) return;
      const box = picker.getBoundingClientRect();
      const x = Math.min(1, Math.max(0, (event.clientX - box.left) / box.width));
      const y = Math.min(1, Math.max(0, (event.clientY - box.top) / box.height));
      focal.value = `${x.toFixed(3)},${y.toFixed(3)}`;
      focal.focus();
    });
  }

  // ---- An album's order: drag and drop, or a focused item moved with Alt+Up and Alt+Down. ----

  const list = /** @type {HTMLOListElement | null} */ (document.querySelector("ol[data-order]"));
  if (list) {
    const orderPath = /** @type {string} */ (list.dataset.order);
    const said = document.getElementById("order-said");
    const items = () => /** @type {HTMLLIElement[]} */ ([...list.querySelectorAll("li[data-id]")]);
    /** @param {string} text */
    const say = (text) => {
      if (said) said.textContent = text;
    };
    /** Sends the order as it now stands (the API takes up to 100 ids first, in that order). */
    async function save() {
      const ids = items().map((item) => /** @type {string} */ (item.dataset.id));
      try {
        await api("PUT", orderPath, JSON.stringify({ uploads: ids.slice(0, 100) }), {
          "Content-Type": "application/json",
        });
        say("Order saved.");
      } catch (error) {
        say(error instanceof Error ? error.message : String(error));
      }
    }
    /** @param {HTMLLIElement} item */
    const label = (item) => item.getAttribute("aria-label") || "Upload";
    /** @type {HTMLLIElement | null} */
    let dragged = null;
    list.addEventListener("dragstart", (event) => {
      dragged = event.target instanceof HTMLLIElement ? event.target : null;
      if (dragged && event.dataTransfer) event.dataTransfer.effectAllowed = "move";
    });
    list.addEventListener("dragover", (event) => {
      const over = event.target instanceof Element ? event.target.closest("li[data-id]") : null;
      if (!dragged || !over || over === dragged) return;
      event.preventDefault();
      const rect = over.getBoundingClientRect();
      const after = event.clientY > rect.top + rect.height / 2 || event.clientX > rect.left + rect.width / 2;
      over.parentNode?.insertBefore(dragged, after ? over.nextSibling : over);
    });
    list.addEventListener("drop", (event) => event.preventDefault());
    list.addEventListener("dragend", () => {
      if (!dragged) return;
      const moved = dragged;
      dragged = null;
      say(`${label(moved)} is now number ${items().indexOf(moved) + 1}.`);
      save();
    });
    list.addEventListener("keydown", (event) => {
      const item = event.target instanceof HTMLLIElement ? event.target : null;
      if (!item || !event.altKey || (event.key !== "ArrowUp" && event.key !== "ArrowDown")) return;
      event.preventDefault();
      const sibling = event.key === "ArrowUp" ? item.previousElementSibling : item.nextElementSibling;
      if (!sibling) return;
      if (event.key === "ArrowUp") list.insertBefore(item, sibling);
      else list.insertBefore(sibling, item);
      item.focus();
      say(`${label(item)} is now number ${items().indexOf(item) + 1} of ${items().length}.`);
      save();
    });
  }
})();
