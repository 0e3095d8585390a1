// The dashboard's passkeys (/assets/passkeys.js), through @simplewebauthn/browser's own build (the
// `SimpleWebAuthnBrowser` global, loaded before this script). A button with data-passkey runs one
// ceremony against data-endpoint: "sign-in" there, or "register" (a link's or the signed-in
// account's new passkey) with the fields of its form. Each ceremony asks data-endpoint/options
// first, lets the browser make or use the passkey, sends the answer, then goes where the
// service says. What went wrong is said in the page's [data-passkey-status].
(() => {
  const webauthn = /** @type {typeof import("@simplewebauthn/browser")} */ (
    /** @type {any} */ (window).SimpleWebAuthnBrowser
  );
  const csrf = /** @type {HTMLMetaElement | null} */ (document.querySelector('meta[name="csrf-token"]'));
  const status = document.querySelector("[data-passkey-status]");

  /** @param {string} text */
  function say(text) {
    if (status) status.textContent = text;
  }

  /**
   * A JSON POST to the service; its `data`, or an Error with the service's own words.
   * @param {string} url
   * @param {Record<string, unknown>} body
   * @returns {Promise<any>}
   */
  async function post(url, body) {
    /** @type {Record<string, string>} */
    const headers = { "Content-Type": "application/json" };
    if (csrf) headers["X-CSRF-Token"] = csrf.content;
    const res = await fetch(url, {
      method: "POST",
      headers: headers,
      body: JSON.stringify(body),
      credentials: "same-origin",
    });
    const answer = await res.json().catch(() => null);
    if (!res.ok) throw new Error((answer && answer.errors) || `The service answered ${res.status}.`);
    return answer.data;
  }

  /** @param {HTMLButtonElement} button */
  async function run(button) {
    const endpoint = button.dataset.endpoint || "";
    const form = button.closest("form");
    if (form && !form.reportValidity()) return;
    /** @type {Record<string, unknown>} */
    const fields = {};
    if (form)
      new FormData(form).forEach((value, name) => {
        fields[name] = String(value);
      });
    button.disabled = true;
    say("");
    try {
      const options = await post(`${endpoint}/options`, fields);
      const response =
        button.dataset.passkey === "sign-in"
          ? await webauthn.startAuthentication({ optionsJSON: options })
          : await webauthn.startRegistration({ optionsJSON: options });
      fields.response = response;
      const done = await post(endpoint, fields);
      location.assign(done.next);
    } catch (error) {
      const e = /** @type {Error} */ (error);
      say(e.name === "NotAllowedError" ? "No passkey was used (it was cancelled, or timed out)." : e.message);
      button.disabled = false;
    }
  }

  document.querySelectorAll("button[data-passkey]").forEach((element) => {
    const button = /** @type {HTMLButtonElement} */ (element);
    if (!webauthn || !webauthn.browserSupportsWebAuthn()) {
      button.disabled = true;
      say("This browser cannot use passkeys.");
      return;
    }
    button.addEventListener("click", (event) => {
      event.preventDefault();
      run(button);
    });
  });
})();
