// @ts-check
/*
 * The browser uploader's script (/assets/uploader.js), served from the site itself so that the
 * page's CSP allows no inline script. Plain ES2017 for any current browser, a classic script (hence
 * "use strict"); it talks to the API exactly as the published clients do.
 */
"use strict";
(() => {
  /**
   * An upload as the API describes it: the fields this page shows.
   * @typedef {{ id: string, title: string | null, type: string, visibility: string, src: string,
   *   direct: string, thumb: string | null, delete_url?: string, duplicate?: boolean }} Upload
   */
  /**
   * An answer of the API: its status, and its JSON body (null when the body was not JSON).
   * @typedef {{ status: number, body: any }} Answer
   */
  /**
   * Which files go over tus (/api/tus): those over 90 MB, the size the Workers platform's 100 MB
   * request bodies make every client send in parts. They resume where the service's offset says,
   * after a dropped connection (by themselves) or a reload (when the same file is chosen again).
   * Smaller files keep going in one POST /api: one request instead of three, any failure costs at
   * most one resend, and they stay out of the daily budget of piece bytes that tus bytes draw on.
   */
  var TUS_OVER = 90 * 1000 * 1000;
  /**
   * Each PATCH is one of the service's 5 MiB pieces, stored as it comes (after a resume from inside
   * a piece, the PATCHes straddle pieces and their bytes are written twice: still correct).
   */
  var TUS_CHUNK = 5 * 1024 * 1024;
  /** Pauses before each retry; they start over whenever bytes got through in between. */
  var TUS_RETRY_DELAYS = [0, 1000, 3000, 5000, 10000, 20000];
  var STORE = "media-host.key";
  /** The page's element with this id: the page this script is made for always has it. */
  var $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
  /**
   * Signed in (the dashboard's /app/upload, which carries the session's CSRF token): the session
   * speaks for the account with the full key's rights, through the dashboard's /app/api, and the
   * page has no key field or tools. Otherwise the key typed in.
   */
  var csrf = /** @type {HTMLMetaElement | null} */ (document.querySelector('meta[name="csrf-token"]'));
  var API = csrf ? "/app/api" : "/api";
  var keyField = /** @type {HTMLInputElement | null} */ (document.getElementById("key")),
    remember = /** @type {HTMLInputElement} */ (document.getElementById("remember"));
  var key = () => (keyField ? keyField.value.trim() : "");
  /** @returns {Record<string, string>} */
  var auth = () => (csrf ? { "X-CSRF-Token": csrf.content } : { "X-API-Key": key() });
  var hasKey = () => Boolean(csrf) || key() !== "";

  function keep() {
    if (keyField && remember.checked && keyField.value) localStorage.setItem(STORE, keyField.value.trim());
    else localStorage.removeItem(STORE);
    updateTools();
    loadMine(1);
    loadAlbums(1);
  }
  /** @param {HTMLInputElement} field */
  function rememberKey(field) {
    var saved = localStorage.getItem(STORE);
    if (saved) {
      field.value = saved;
      remember.checked = true;
    }
    field.addEventListener("change", keep);
    remember.addEventListener("change", keep);
    $("forget").addEventListener("click", () => {
      localStorage.removeItem(STORE);
      field.value = "";
      remember.checked = false;
      keep();
    });
  }
  if (keyField) rememberKey(keyField);

  /**
   * @template {keyof HTMLElementTagNameMap} K
   * @param {K} tag
   * @param {Record<string, string>} attrs attributes, and "text" for the text content
   * @param {(Node | null)[]} [children]
   * @returns {HTMLElementTagNameMap[K]}
   */
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach((name) => {
      if (name === "text") node.textContent = attrs[name];
      else node.setAttribute(name, attrs[name]);
    });
    (children || []).forEach((child) => {
      if (child) node.appendChild(child);
    });
    return node;
  }
  var copyId = 0;
  /** @param {string} label @param {string} value */
  function copyField(label, value) {
    var id = `copy-${++copyId}`;
    return el("div", { class: "share" }, [
      el("label", { for: id, text: label }),
      el("span", {}, [
        el("input", { id: id, readonly: "", value: value }),
        el("button", { type: "button", "data-copy": id, text: "Copy" }),
      ]),
    ]);
  }

  /**
   * One request with upload progress; resolves { status, body } whatever the status. A request
   * that goes STALL_MS without sending a byte or getting its answer is abandoned (an error),
   * however slow the line: only silence counts.
   */
  var STALL_MS = 30000;
  /**
   * @param {string} method
   * @param {string} url
   * @param {FormData} form
   * @param {(loaded: number, total: number) => void} [onProgress]
   * @returns {Promise<Answer>}
   */
  function send(method, url, form, onProgress) {
    return new Promise((resolve, reject) => {
      var xhr = new XMLHttpRequest();
      /** @type {number | undefined} */
      var timer;
      var alive = () => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          xhr.abort();
          reject(new Error(`no answer for ${STALL_MS / 1000} s`));
        }, STALL_MS);
      };
      xhr.open(method, url);
      var headers = auth();
      Object.keys(headers).forEach((name) => {
        xhr.setRequestHeader(name, headers[name]);
      });
      xhr.upload.onprogress = (e) => {
        alive();
        if (onProgress && e.lengthComputable) onProgress(e.loaded, e.total);
      };
      xhr.onload = () => {
        clearTimeout(timer);
        var body = null;
        try {
          body = JSON.parse(xhr.responseText);
        } catch (_e) {
          body = null;
        }
        resolve({ status: xhr.status, body: body });
      };
      xhr.onerror = () => {
        clearTimeout(timer);
        reject(new Error("network error"));
      };
      alive();
      xhr.send(form);
    });
  }
  var failed = (/** @type {Answer} */ res) =>
    new Error((res.body && res.body.errors) || `the service answered ${res.status}`);

  /**
   * The options set on the page, as the upload's text fields.
   * @returns {Record<string, string>}
   */
  function options() {
    /** @type {Record<string, string>} */
    var fields = { visibility: /** @type {HTMLSelectElement} */ ($("visibility")).value };
    var title = /** @type {HTMLInputElement} */ ($("title")).value.trim();
    if (title) fields.title = title;
    var expiry = /** @type {HTMLSelectElement} */ ($("expiry")).value;
    if (expiry) fields.expires_in = expiry;
    if (/** @type {HTMLInputElement} */ ($("keep-original")).checked) fields.keep_original = "1";
    var album = chosenAlbum();
    if (album) fields.album = album;
    return fields;
  }

  /**
   * @param {File} file
   * @param {(share: number) => void} progress
   * @returns {Promise<Upload>}
   */
  function direct(file, progress) {
    var form = new FormData();
    var fields = options();
    Object.keys(fields).forEach((name) => {
      form.append(name, fields[name]);
    });
    form.append("uploads", file, file.name || "pasted");
    return send("POST", API, form, (loaded, total) => {
      progress(loaded / total);
    }).then((res) => {
      if (res.status !== 200) throw failed(res);
      return res.body.data;
    });
  }

  /** tus-js-client's browser build (/assets/tus-js-client-{version}.min.js) defines the global `tus`. */
  var tusClient = /** @type {typeof import("tus-js-client") | undefined} */ (/** @type {any} */ (window).tus);
  var TUS_VERSION = { "Tus-Resumable": "1.0.0" };
  /** @param {Error} error the status of tus-js-client's failed request's answer; 0 when none came */
  var statusOf = (error) => {
    var response = /** @type {import("tus-js-client").DetailedError} */ (error).originalResponse;
    return response ? response.getStatus() : 0;
  };
  /**
   * Whether tus-js-client should try a failed request again: a network error while the browser is
   * online (offline, the upload waits for the connection instead), a 5xx, and the service's answers
   * that say to wait (409 offset moved, 423 another request writing, 429 limit).
   * @param {import("tus-js-client").DetailedError} error
   */
  function worthRetrying(error) {
    var status = statusOf(error);
    if (status === 0) return navigator.onLine;
    return status >= 500 || status === 409 || status === 423 || status === 429;
  }
  /**
   * The service's own words for a failure of tus-js-client's, when it answered.
   * @param {Error} error
   */
  function tusFailure(error) {
    var response = /** @type {import("tus-js-client").DetailedError} */ (error).originalResponse;
    if (!response) return error;
    var body = null;
    try {
      body = JSON.parse(response.getBody());
    } catch (_e) {
      body = null;
    }
    return failed({ status: response.getStatus(), body: body });
  }

  /**
   * A large file over tus: created with the page's options as Upload-Metadata, then sent in 5 MiB
   * PATCHes from the service's offset. tus-js-client remembers the upload's URL in localStorage
   * under the file's fingerprint (its name, type, size and date), so choosing the same file after
   * a reload resumes it; a request that fails is retried by itself (TUS_RETRY_DELAYS), and while
   * the browser is offline the upload waits for the connection. The upload made is read from the
   * tus URL, with the delete link and duplicate flag the finishing answer carries.
   * @param {File} file
   * @param {(share: number) => void} progress
   * @param {(text: string) => void} say
   * @returns {Promise<Upload>}
   */
  function resumable(file, progress, say) {
    if (!tusClient || !tusClient.isSupported) {
      return Promise.reject(new Error("this browser cannot send files this large"));
    }
    var TusUpload = tusClient.Upload;
    /** @type {Record<string, string>} */
    var metadata = options();
    metadata.filename = file.name || "file";
    return new Promise((resolve, reject) => {
      var upload = new TusUpload(file, {
        endpoint: `${location.origin}${API}/tus`,
        headers: auth(),
        metadata: metadata,
        chunkSize: TUS_CHUNK,
        retryDelays: TUS_RETRY_DELAYS,
        onShouldRetry: worthRetrying,
        removeFingerprintOnSuccess: true,
        onProgress: (sent, total) => {
          progress(sent / total);
        },
        onError: (error) => {
          if (statusOf(error) !== 0 || navigator.onLine) {
            reject(tusFailure(error));
            return;
          }
          say(" waiting for the connection");
          window.addEventListener(
            "online",
            () => {
              say(" resuming");
              upload.start();
            },
            { once: true },
          );
        },
        onSuccess: (payload) => {
          var last = payload.lastResponse;
          var deleteUrl = last.getHeader("X-Upload-Delete-Url");
          var duplicate = last.getHeader("X-Upload-Duplicate") === "true";
          fetch(/** @type {string} */ (upload.url), { headers: Object.assign(auth(), TUS_VERSION) })
            .then((res) => res.json().then((body) => ({ status: res.status, body: body })))
            .then((res) => {
              if (res.status !== 200) throw failed(res);
              /** @type {Upload} */
              var data = res.body.data;
              if (deleteUrl) data.delete_url = deleteUrl;
              data.duplicate = duplicate;
              resolve(data);
            })
            .catch(reject);
        },
      });
      upload
        .findPreviousUploads()
        .then((previous) => {
          var newest = previous.sort((a, b) => Date.parse(b.creationTime) - Date.parse(a.creationTime))[0];
          if (newest) {
            say(" resuming");
            upload.resumeFromPreviousUpload(newest);
          }
          upload.start();
        })
        .catch(reject);
    });
  }

  /** @param {File} file */
  function upload(file) {
    var bar = el("progress", { max: "1", value: "0", "aria-label": `Upload of ${file.name || "pasted file"}` });
    var status = el("span", { text: " waiting" });
    var item = el("li", {}, [el("strong", { text: file.name || "pasted file" }), status, bar]);
    $("results").prepend(item);
    if (!hasKey()) {
      status.textContent = " no key: enter your API key first";
      status.className = "error";
      return Promise.resolve();
    }
    var overTus = file.size > TUS_OVER;
    status.textContent = overTus ? " uploading (resumable)" : " uploading";
    var progress = (/** @type {number} */ share) => {
      bar.value = share;
      item.dispatchEvent(new CustomEvent("upload-progress", { bubbles: true, detail: share }));
    };
    var say = (/** @type {string} */ text) => {
      status.textContent = text;
    };
    return (overTus ? resumable(file, progress, say) : direct(file, progress)).then(
      (data) => {
        bar.value = 1;
        status.textContent = data.duplicate ? " done (you had uploaded this file before)" : " done";
        item.setAttribute("data-id", data.id);
        if (data.thumb) item.appendChild(el("img", { src: data.thumb, alt: data.title || "Thumbnail" }));
        item.appendChild(copyField("Direct link", data.src));
        item.appendChild(copyField("Page link", data.direct));
        item.appendChild(copyField("Markdown", `![${data.title || ""}](${data.src})`));
        if (data.delete_url) item.appendChild(copyField("Delete link (keep it private)", data.delete_url));
        loadMine(1);
        if (chosenAlbum()) loadAlbums(1);
      },
      (error) => {
        status.textContent = ` failed: ${error.message}`;
        status.className = "error";
      },
    );
  }

  /** @param {File[]} files */
  async function uploadAll(files) {
    for (let i = 0; i < files.length; i++) await upload(files[i]);
  }

  var drop = $("drop");
  $("files").addEventListener("change", (e) => {
    var picker = /** @type {HTMLInputElement} */ (e.target);
    uploadAll(Array.prototype.slice.call(picker.files));
    picker.value = "";
  });
  drop.addEventListener("dragover", (e) => {
    e.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => {
    drop.classList.remove("over");
  });
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    uploadAll(Array.prototype.slice.call(/** @type {DataTransfer} */ (e.dataTransfer).files));
  });
  document.addEventListener("paste", (e) => {
    var files = Array.prototype.slice.call((e.clipboardData && e.clipboardData.files) || []);
    if (files.length) {
      e.preventDefault();
      uploadAll(files);
    }
  });

  /** @param {number} bytes */
  var megabytes = (bytes) => `${(bytes / 1048576).toFixed(1)} MB`;
  /** What the account stores and may store (GET /api/usage, either key), shown above the files. */
  async function loadUsage() {
    var shown = $("usage");
    var res = hasKey() ? await fetch(`${API}/usage`, { headers: auth() }).catch(() => null) : null;
    if (!res || res.status !== 200) {
      shown.hidden = true;
      return;
    }
    /** @type {{ bytes_used: number, bytes_allowed: number | null, uploads_used: number,
     *   uploads_allowed: number | null }} */
    var usage = (await res.json()).data;
    var bytes =
      megabytes(usage.bytes_used) + (usage.bytes_allowed === null ? "" : ` of ${megabytes(usage.bytes_allowed)}`);
    var count = `${usage.uploads_used}${usage.uploads_allowed === null ? "" : ` of ${usage.uploads_allowed}`} uploads`;
    shown.textContent = `Used: ${bytes}, ${count}.`;
    shown.hidden = false;
  }

  /** With a full key, the account's uploads, newest first, each with a delete button. */
  var minePage = 1;
  /** @param {number} page */
  async function loadMine(page) {
    var section = $("mine"),
      list = $("mine-list");
    if (page === 1) loadUsage();
    if (!isFullKey()) {
      section.hidden = true;
      return;
    }
    var res = await fetch(`${API}?page=${page}`, { headers: auth() }).catch(() => null);
    if (!res || res.status !== 200) {
      section.hidden = true;
      return;
    }
    /** @type {{ data: Upload[], meta: { current_page: number, last_page: number } }} */
    var body = await res.json();
    if (page === 1) list.textContent = "";
    body.data.forEach((upload) => {
      var remove = el("button", { type: "button", text: "Delete" });
      var item = el("li", { "data-id": upload.id }, [
        el("a", { href: upload.direct, text: upload.title || upload.id }),
        el("span", { text: ` ${upload.type}, ${upload.visibility} ` }),
        remove,
      ]);
      remove.addEventListener("click", async () => {
        if (!confirm("Delete this upload for good?")) return;
        var gone = await fetch(`${API}/${upload.id}`, { method: "DELETE", headers: auth() });
        if (gone.status === 200) item.remove();
        else remove.textContent = `Could not delete (${gone.status})`;
      });
      list.appendChild(item);
    });
    minePage = body.meta.current_page;
    $("mine-more").hidden = body.meta.current_page >= body.meta.last_page;
    section.hidden = false;
  }
  $("mine-more").addEventListener("click", () => {
    loadMine(minePage + 1);
  });

  /**
   * An album as the API describes it: the fields this page shows.
   * @typedef {{ id: string, title: string | null, visibility: string, url: string, upload_count: number }} Album
   */
  /**
   * The album the next uploads go into (the `album` field, and tus metadata): with a full key, the
   * one picked in the list of the account's albums; with an upload-only key, which cannot list
   * them, the id typed (of an album whose owner let it accept uploads); none when empty.
   */
  var albumPick = /** @type {HTMLSelectElement} */ ($("album"));
  var albumTyped = /** @type {HTMLInputElement} */ ($("album-id"));
  var isFullKey = () => Boolean(csrf) || key().indexOf("fk_") === 0;
  function chosenAlbum() {
    if (isFullKey()) return albumPick.value;
    return hasKey() ? albumTyped.value.trim() : "";
  }
  /** The option naming `album` in the picker, added when missing. */
  function albumOption(/** @type {Album} */ album) {
    var option = /** @type {HTMLOptionElement | null} */ (albumPick.querySelector(`option[value="${album.id}"]`));
    if (!option) {
      option = el("option", { value: album.id });
      albumPick.appendChild(option);
    }
    option.textContent = album.title || album.id;
    return option;
  }
  /** With a full key, the account's albums, newest first: in the picker, and listed with links to their pages. */
  var albumsPage = 1;
  /** @param {number} page */
  async function loadAlbums(page) {
    var section = $("albums"),
      list = $("albums-list");
    $("album-typed").hidden = !hasKey() || isFullKey();
    if (!isFullKey()) {
      section.hidden = true;
      $("album-pick").hidden = true;
      return;
    }
    var res = await fetch(`${API}/albums?page=${page}`, { headers: auth() }).catch(() => null);
    if (!res || res.status !== 200) {
      section.hidden = true;
      $("album-pick").hidden = true;
      return;
    }
    /** @type {{ data: Album[], meta: { current_page: number, last_page: number } }} */
    var body = await res.json();
    if (page === 1) list.textContent = "";
    body.data.forEach((album) => {
      albumOption(album);
      var count = `${album.upload_count} upload${album.upload_count === 1 ? "" : "s"}`;
      list.appendChild(
        el("li", { "data-id": album.id }, [
          el("a", { href: album.url, text: album.title || album.id }),
          el("span", { text: ` ${count}, ${album.visibility}` }),
        ]),
      );
    });
    albumsPage = body.meta.current_page;
    $("albums-more").hidden = body.meta.current_page >= body.meta.last_page;
    section.hidden = body.data.length === 0 && page === 1;
    $("album-pick").hidden = false;
  }
  $("albums-more").addEventListener("click", () => {
    loadAlbums(albumsPage + 1);
  });
  /** Makes an album of the title typed (the API's default visibility, unlisted) and picks it. */
  $("album-create").addEventListener("click", async () => {
    var title = /** @type {HTMLInputElement} */ ($("album-new"));
    var said = $("album-said");
    var res = await fetch(`${API}/albums`, {
      method: "POST",
      headers: Object.assign(auth(), { "Content-Type": "application/json" }),
      body: JSON.stringify(title.value.trim() ? { title: title.value.trim() } : {}),
    }).catch(() => null);
    var body = res ? await res.json().catch(() => null) : null;
    if (!res || res.status !== 200 || !body) {
      said.textContent = `Could not create it: ${(body && body.errors) || (res ? res.status : "network error")}`;
      said.className = "error";
      return;
    }
    /** @type {Album} */
    var album = body.data;
    albumOption(album).selected = true;
    title.value = "";
    said.textContent = "Created: the next uploads go into it.";
    said.className = "";
    loadAlbums(1);
  });

  /**
   * Configurations for other tools (client-configs.js), filled in with the key in this browser
   * only: files to download, and commands to copy.
   */
  var KEY_PLACEHOLDER = "YOUR_KEY";
  /**
   * @param {string} id
   * @param {() => unknown} build
   * @param {string} name
   */
  function offerFile(id, build, name) {
    $(id).addEventListener("click", () => {
      var file = new Blob([JSON.stringify(build(), null, 2)], { type: "application/json" });
      var link = el("a", { href: URL.createObjectURL(file), download: name });
      document.body.appendChild(link);
      link.click();
      link.remove();
    });
  }
  function updateTools() {
    // Signed in, the page has no tools: the dashboard's keys page gives them a key.
    if (!keyField) return;
    var typed = key() || KEY_PLACEHOLDER;
    /** @type {HTMLTextAreaElement} */ ($("snippet")).value = clientConfigs.shell(location.origin, typed);
    /** @type {HTMLTextAreaElement} */ ($("typora")).value = clientConfigs.typora(location.origin, typed);
  }
  if (keyField) {
    offerFile("sxcu", () => clientConfigs.shareX(location.origin, key()), `${location.host}.sxcu`);
    offerFile("picgo", () => clientConfigs.picGo(location.origin, key()), "picgo-config.json");
    offerFile("upic", () => clientConfigs.uPic(location.origin, key(), Date.now()), "uPic_hosts.json");
    keyField.addEventListener("input", updateTools);
  }
  updateTools();
  loadMine(1);
  loadAlbums(1);
})();
