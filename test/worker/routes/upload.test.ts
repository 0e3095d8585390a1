import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_REQUEST_BYTES, MiB } from "../../../src/model/spec-limits";
import { bigPng, fixture, json, newAccount, request, strayObjects, upload, uniquePng } from "../helpers";

async function sha256(bytes: ArrayBuffer | Uint8Array) {
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

describe("POST /api: the file", () => {
  it.each([
    ["tiny/jpeg.jpg", "image", "jpg", "image/jpeg"],
    ["tiny/png-transparent.png", "image", "png", "image/png"],
    ["tiny/gif.gif", "image", "gif", "image/gif"],
    ["tiny/webp.webp", "image", "webp", "image/webp"],
    ["tiny/bmp.bmp", "image", "bmp", "image/bmp"],
    ["tiny/tiff.tif", "image", "tif", "image/tiff"],
    ["heic/IMG_5195.HEIC", "image", "heic", "image/heic"],
    ["tiny/Mpeg4.mp4", "video", "mp4", "video/mp4"],
    ["tiny/webm.webm", "video", "webm", "video/webm"],
    ["tiny/AudioVideoInterleave.avi", "video", "avi", "video/x-msvideo"],
  ])("stores %s as %s and serves the same bytes", async (path, type, ext, mime) => {
    const account = await newAccount();
    const bytes = await fixture(path);
    const res = await upload(account.full, bytes);
    expect(res.status).toBe(200);
    const data = res.body.data;
    expect(res.body).toMatchObject({ type: "success", msg: "success" });
    expect(data).toMatchObject({
      type,
      size: bytes.length,
      duplicate: false,
      locked: false,
      visibility: "unlisted",
      title: null,
      description: null,
      expires_at: null,
    });
    expect(data.path).toMatch(new RegExp(`\\.${ext}$`));
    // HEIC and TIFF are converted to WebP after the response, and not served before (see
    // uploads/image.test.ts); videos may already be remuxed or converted by now.
    if (["heic", "tif"].includes(ext)) return;
    const served = await request(new URL(data.src).pathname);
    expect(served.status).toBe(200);
    if (type === "image") {
      expect(served.headers.get("Content-Type")).toBe(mime);
      expect(await sha256(await served.arrayBuffer())).toBe(await sha256(bytes));
    } else {
      expect(served.headers.get("Content-Type")).toMatch(/^video\//);
    }
  });

  it("decides the type from the bytes, never from the name or Content-Type", async () => {
    const account = await newAccount();
    const form = new FormData();
    form.append("uploads", new Blob([await fixture("tiny/gif.gif")], { type: "video/mp4" }), "movie.mp4");
    const res = await json(request("/api", { method: "POST", headers: { "X-API-Key": account.full }, body: form }));
    expect(res.status).toBe(200);
    expect(res.body.data.type).toBe("image");
    expect(res.body.data.path).toMatch(/\.gif$/);

    const svg = new FormData();
    svg.append("uploads", new Blob([await fixture("tiny/svg.svg")], { type: "image/png" }), "picture.png");
    const refused = await json(request("/api", { method: "POST", headers: { "X-API-Key": account.full }, body: svg }));
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toMatch(/Unsupported file type/);
  });

  it.each(["tiny/svg.svg", "tiny/pdf.pdf", "tiny/zip.zip"])("refuses %s with 422 and stores nothing", async (path) => {
    const account = await newAccount();

    const res = await upload(account.full, await fixture(path));
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      type: "error",
      errors: expect.stringMatching(/Unsupported file type. Accepted: JPG, PNG/),
    });
    expect(await strayObjects()).toEqual([]);
  });

  it("refuses a request with no source, an empty file, or two sources", async () => {
    const account = await newAccount();
    const none = await upload(account.full, null, { title: "x" });
    expect(none.status).toBe(422);
    expect(none.body.errors).toMatch(/No file or link/);
    expect((await upload(account.full, new Uint8Array())).status).toBe(422);
    const two = await upload(account.full, await uniquePng("two"), { url: "https://example.com/a.png" });
    expect(two.status).toBe(422);
    expect(two.body.errors).toMatch(/exactly one of uploads, url or upload_id/);
    const both = await upload(account.full, null, {
      url: "https://example.com/a.png",
      upload_id: "0123456789abcdef0123456789abcdef",
    });
    expect(both.status).toBe(422);
    const empty = await json(request("/api", { method: "POST", headers: { "X-API-Key": account.full } }));
    expect(empty.status).toBe(422);
  });

  it("refuses two files in one request (no batch upload)", async () => {
    const account = await newAccount();

    const form = new FormData();
    form.append("uploads", new Blob([await uniquePng("batch-1")]), "a.png");
    form.append("uploads", new Blob([await uniquePng("batch-2")]), "b.png");
    const res = await json(request("/api", { method: "POST", headers: { "X-API-Key": account.full }, body: form }));
    expect(res.status).toBe(422);
    expect(res.body.errors).toMatch(/One file per request/);
    expect(await strayObjects()).toEqual([]);
  });

  it("refuses a non-multipart upload that is not a form or JSON", async () => {
    const account = await newAccount();
    const res = await json(
      request("/api", {
        method: "POST",
        headers: { "X-API-Key": account.full, "Content-Type": "image/png" },
        body: await uniquePng("raw"),
      }),
    );
    expect(res.status).toBe(422);
    expect(res.body.type).toBe("error");
  });
});

describe("POST /api: size limits", () => {
  it("answers 413 from Content-Length alone, before reading the body", async () => {
    const account = await newAccount();
    const body = new FixedLengthStream(MAX_REQUEST_BYTES + 1);
    const res = await json(
      request("/api", {
        method: "POST",
        headers: {
          "X-API-Key": account.full,
          "Content-Type": "multipart/form-data; boundary=xyz",
          "Content-Length": String(MAX_REQUEST_BYTES + 1),
        },
        body: body.readable,
      }),
    );
    expect(res.status).toBe(413);
    expect(res.body.errors).toMatch(/over 100MB/);
  });

  it("answers 413 once a streamed body without Content-Length passes 100 MB, storing nothing", async () => {
    const account = await newAccount();

    const png = await uniquePng("huge");
    const filler = new Uint8Array(MiB);
    const head = new TextEncoder().encode(
      '--xyz\r\nContent-Disposition: form-data; name="uploads"; filename="big.png"\r\n\r\n',
    );
    // Written by hand so that the write failing (the server stops reading at the limit) is ours to catch.
    const { readable, writable } = new IdentityTransformStream();
    const writer = writable.getWriter();
    writer.closed.catch(() => {});
    let sent = 0;
    const writing = (async () => {
      try {
        await writer.write(head);
        await writer.write(png);
        for (; sent < 102; sent++) await writer.write(filler);
        await writer.close();
      } catch {
        // expected: the body is abandoned once it passes the limit
      }
    })();
    const res = await json(
      request("/api", {
        method: "POST",
        headers: { "X-API-Key": account.full, "Content-Type": "multipart/form-data; boundary=xyz" },
        body: readable,
      }),
    );
    await writing;
    expect(res.status).toBe(413);
    expect(sent).toBeLessThan(103);
    expect(await strayObjects()).toEqual([]);
  });

  it("stores a file larger than one storage part (multipart write) intact", async () => {
    const account = await newAccount();
    const big = await bigPng(20 * MiB + 12345);
    const res = await upload(account.full, big);
    expect(res.status).toBe(200);
    expect(res.body.data.size).toBe(big.length);
    const served = await request(new URL(res.body.data.src).pathname);
    expect(await sha256(await served.arrayBuffer())).toBe(await sha256(big));
  });
});

describe("POST /api: fields", () => {
  it("accepts every optional field of the spec, before or after the file", async () => {
    const account = await newAccount();
    const form = new FormData();
    form.append("uploads", new Blob([await uniquePng("fields")]), "a.png");
    form.append("title", "  Sunset 🌅  ");
    form.append("description", "Taken at the beach");
    form.append("visibility", "public");
    form.append("expires_in", "3600");
    form.append("keep_original", "yes");
    const before = Date.now();
    const res = await json(request("/api", { method: "POST", headers: { "X-API-Key": account.full }, body: form }));
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      title: "Sunset 🌅",
      description: "Taken at the beach",
      visibility: "public",
    });
    const expires = Date.parse(res.body.data.expires_at);
    expect(expires).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 3600_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 3600_000);
    expect(res.body.data.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
  });

  it.each([
    [{ expires_in: "59" }, /expires_in: must be at least 60/],
    [{ expires_in: "31536001" }, /expires_in: must be at most 31536000/],
    [{ expires_in: "1.5" }, /expires_in: must be a whole number/],
    [{ expires_in: "soon" }, /expires_in/],
    [{ visibility: "secret" }, /visibility: must be one of unlisted, private, public/],
    [{ title: "x".repeat(91) }, /title: must be at most 90 characters/],
    [{ description: "x".repeat(501) }, /description: must be at most 500 characters/],
    [{ allow_duplicate: "maybe" }, /allow_duplicate: must be one of/],
    [{ keep_original: "2" }, /keep_original/],
  ])("refuses %o with 422 and stores nothing", async (fields, message) => {
    const account = await newAccount();

    const res = await upload(account.full, await uniquePng(JSON.stringify(fields)), fields as Record<string, string>);
    expect(res.status).toBe(422);
    expect(res.body.errors).toMatch(message);
    expect(await strayObjects()).toEqual([]);
  });

  it("counts characters, not bytes or UTF-16 units, against the title limit", async () => {
    const account = await newAccount();
    const res = await upload(account.full, await uniquePng("emoji"), {
      title: "🌅".repeat(90),
      expires_in: "60",
      description: "é".repeat(500),
    });
    expect(res.status).toBe(200);
    expect([...res.body.data.title]).toHaveLength(90);
  });

  it("accepts 1/0, true/false, yes/no, on/off in any case as booleans", async () => {
    const account = await newAccount();
    const png = await uniquePng("booleans");
    const first = await upload(account.full, png);
    for (const yes of ["1", "true", "TRUE", "yes", "On"]) {
      const res = await upload(account.full, png, { allow_duplicate: yes });
      expect(res.status, yes).toBe(200);
      expect(res.body.data.duplicate, yes).toBe(false);
      expect(res.body.data.id).not.toBe(first.body.data.id);
    }
    for (const no of ["0", "false", "No", "off", ""]) {
      const res = await upload(account.full, png, { allow_duplicate: no });
      expect(res.status, no).toBe(200);
      expect(res.body.data.duplicate, no).toBe(true);
      expect(res.body.data.id).toBe(first.body.data.id);
    }
  });

  it("refuses JSON fields that are not text, numbers or booleans, however deeply nested", async () => {
    const account = await newAccount();
    for (const title of [["a"], { a: 1 }]) {
      const res = await json(
        request("/api", {
          key: account.upload,
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ url: "https://example.com/a.png", title }),
        }),
      );
      expect(res.status, JSON.stringify(title)).toBe(422);
      expect(res.body.errors).toMatch(/^title: /);
    }
    // Turning this into text once recursed until the stack ran out: a 500.
    const deep = `{"title":${"[".repeat(20_000)}${"]".repeat(20_000)}}`;
    const res = await json(
      request("/api", {
        key: account.upload,
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: deep,
      }),
    );
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ type: "error", errors: expect.stringMatching(/^title: /) });
  });
});

describe("POST /api: duplicates", () => {
  it("answers the same bytes again with the existing upload and stores nothing new", async () => {
    const account = await newAccount();
    const png = await uniquePng("dup");
    const first = await upload(account.full, png, { title: "first" });

    const again = await upload(account.full, png, { title: "second" });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ id: first.body.data.id, duplicate: true, title: "first" });
    expect(again.body.data).not.toHaveProperty("delete_url");
    expect(first.body.data.delete_url).toMatch(/\/d\//);
    expect(await strayObjects()).toEqual([]);
    expect((await json(request("/api", { key: account.full }))).body.meta.total).toBe(1);
  });

  it("does not apply to expiring uploads, to allow_duplicate, or across accounts", async () => {
    const a = await newAccount();
    const b = await newAccount();
    const png = await uniquePng("dup-rules");
    const first = await upload(a.full, png);
    const expiring = await upload(a.full, png, { expires_in: "600" });
    expect(expiring.body.data.duplicate).toBe(false);
    expect(expiring.body.data.id).not.toBe(first.body.data.id);
    const copy = await upload(a.full, png, { allow_duplicate: "1" });
    expect(copy.body.data.duplicate).toBe(false);
    const other = await upload(b.full, png);
    expect(other.body.data.duplicate).toBe(false);
    expect(other.body.data.id).not.toBe(first.body.data.id);
  });

  it("matches a permanent upload only, and still finds a kept copy once the first is deleted", async () => {
    const account = await newAccount();
    const png = await uniquePng("dup-expiring-first");
    const expiring = await upload(account.full, png, { expires_in: "600" });
    const permanent = await upload(account.full, png);
    expect(permanent.body.data.duplicate).toBe(false);
    expect(permanent.body.data.id).not.toBe(expiring.body.data.id);
    const copy = await upload(account.full, png, { allow_duplicate: "true" });
    await json(request(`/api/${permanent.body.data.id}`, { key: account.full, method: "DELETE" }));
    const again = await upload(account.full, png);
    expect(again.body.data).toMatchObject({ duplicate: true, id: copy.body.data.id });
  });

  it("stores identical uploads that arrive at the same moment only once", async () => {
    const account = await newAccount();
    const png = await uniquePng("race");

    const results = await Promise.all(Array.from({ length: 6 }, () => upload(account.full, png)));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(new Set(results.map((r) => r.body.data.id)).size).toBe(1);
    expect(results.filter((r) => !r.body.data.duplicate)).toHaveLength(1);
    expect(await strayObjects()).toEqual([]);
    // One stored copy of the file (its WebP thumbnail may already be there too).
    const stored = (await env.FILES.list({ prefix: `uploads/${results[0]!.body.data.id}/` })).objects;
    expect(stored.filter((o) => o.key.endsWith(".png"))).toHaveLength(1);
    expect(stored.filter((o) => !o.key.endsWith(".png")).length).toBeLessThanOrEqual(1);
  });
});

describe("delete_url", () => {
  it("shows a confirmation page on GET and deletes on POST, once", async () => {
    const account = await newAccount();
    const res = await upload(account.full, await uniquePng("delete-url"), { title: "<b>mine</b>" });
    const link = new URL(res.body.data.delete_url);
    const page = await request(link.pathname);
    expect(page.status).toBe(200);
    expect(page.headers.get("Content-Type")).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain('<form method="post">');
    expect(html).toContain("&lt;b&gt;mine&lt;/b&gt;");
    // GET did not delete.
    expect((await json(request(`/api/${res.body.data.id}`, { key: account.full }))).status).toBe(200);

    const deleted = await json(request(link.pathname, { method: "POST" }));
    expect(deleted).toMatchObject({ status: 200, body: { type: "success", msg: "Deleted." } });
    expect((await json(request(`/api/${res.body.data.id}`, { key: account.full }))).status).toBe(404);
    expect((await request(new URL(res.body.data.src).pathname)).status).toBe(404);
    expect((await json(request(link.pathname, { method: "POST" }))).status).toBe(404);
    expect((await json(request(link.pathname))).status).toBe(404);
    const objects = await env.FILES.list({ prefix: `uploads/${res.body.data.id}/` });
    expect(objects.objects).toHaveLength(0);
  });

  it("answers a browser's form POST with a page, and DELETE with JSON", async () => {
    const account = await newAccount();
    const one = await upload(account.full, await uniquePng("delete-url-html"));
    const html = await request(new URL(one.body.data.delete_url).pathname, {
      method: "POST",
      headers: { Accept: "text/html" },
    });
    expect(html.status).toBe(200);
    expect(await html.text()).toContain("Deleted");
    const two = await upload(account.full, await uniquePng("delete-url-delete"));
    const res = await json(request(new URL(two.body.data.delete_url).pathname, { method: "DELETE" }));
    expect(res).toMatchObject({ status: 200, body: { type: "success", msg: "Deleted." } });
  });

  it("refuses a tampered or foreign token with 404 and keeps the upload", async () => {
    const account = await newAccount();
    const res = await upload(account.full, await uniquePng("tampered"));
    const other = await upload(account.full, await uniquePng("tampered-other"));
    const link = new URL(res.body.data.delete_url).pathname;
    const tampered = link.slice(0, -1) + (link.endsWith("a") ? "b" : "a");
    const foreign = `/d/${res.body.data.id}/${new URL(other.body.data.delete_url).pathname.split("/").pop()}`;
    for (const path of [tampered, foreign, `/d/${res.body.data.id}/`, `/d/nope/${link.split("/").pop()}`]) {
      expect((await request(path, { method: "POST" })).status, path).toBe(404);
      expect((await request(path)).status, path).toBe(404);
    }
    expect((await json(request(`/api/${res.body.data.id}`, { key: account.full }))).status).toBe(200);
  });
});
