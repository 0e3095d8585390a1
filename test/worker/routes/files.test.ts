import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parseRange } from "../../../src/http/serve-object";
import { fixture, newAccount, request, upload, uniquePng, json } from "../helpers";

async function uploaded(fields: Record<string, string> = {}, bytes?: Uint8Array) {
  const account = await newAccount();
  // A PNG without metadata: stored exactly as sent.
  const file = bytes ?? (await fixture("pngsuite/basn6a16.png"));
  const res = await upload(account.full, file, fields);
  const data = res.body.data;
  return {
    account,
    data,
    file,
    src: new URL(data.src).pathname,
    path: new URL(data.path).pathname,
    direct: new URL(data.direct).pathname,
  };
}

describe("src and path", () => {
  it("stream the file with type, length, ETag, caching and nosniff headers", async () => {
    const { src, path, file } = await uploaded();
    for (const [url, cache] of [
      [src, "public, no-cache"],
      [path, "private, max-age=31536000, immutable"],
    ] as const) {
      const res = await request(url);
      expect(res.status).toBe(200);
      expect(res.headers.get("Content-Type")).toBe("image/png");
      expect(res.headers.get("Content-Length")).toBe(String(file.length));
      expect(res.headers.get("ETag")).toMatch(/^"[^"]+"$/);
      expect(res.headers.get("Cache-Control")).toBe(cache);
      expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
      expect(res.headers.get("Accept-Ranges")).toBe("bytes");
      expect(new Uint8Array(await res.arrayBuffer())).toEqual(file);
    }
  });

  it("answer If-None-Match with 304", async () => {
    const { src } = await uploaded();
    const etag = (await request(src)).headers.get("ETag")!;
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const res = await request(src, { headers: { "If-None-Match": header } });
      expect(res.status, header).toBe(304);
      expect(res.headers.get("ETag")).toBe(etag);
      expect(await res.text()).toBe("");
    }
    expect((await request(src, { headers: { "If-None-Match": '"other"' } })).status).toBe(200);
  });

  it("serve byte ranges with 206, and refuse ranges outside the file with 416", async () => {
    const { src, file } = await uploaded();
    const size = file.length;
    const cases: [string, number, number][] = [
      ["bytes=0-99", 0, 99],
      ["bytes=100-", 100, size - 1],
      ["bytes=-500", size - 500, size - 1],
      [`bytes=10-${size + 1000}`, 10, size - 1],
    ];
    for (const [range, start, end] of cases) {
      const res = await request(src, { headers: { Range: range } });
      expect(res.status, range).toBe(206);
      expect(res.headers.get("Content-Range")).toBe(`bytes ${start}-${end}/${size}`);
      expect(res.headers.get("Content-Length")).toBe(String(end - start + 1));
      expect(new Uint8Array(await res.arrayBuffer())).toEqual(file.slice(start, end + 1));
    }
    const outside = await request(src, { headers: { Range: `bytes=${size}-` } });
    expect(outside.status).toBe(416);
    expect(outside.headers.get("Content-Range")).toBe(`bytes */${size}`);
    expect(await outside.json()).toEqual({ type: "error", errors: expect.any(String) });
    // Malformed or multiple ranges are ignored: the whole file.
    for (const range of ["bytes=5-1", "items=0-1", "bytes=0-1,5-9"]) {
      expect((await request(src, { headers: { Range: range } })).status, range).toBe(200);
    }
    // If-Range with a stale validator also means the whole file.
    expect((await request(src, { headers: { Range: "bytes=0-9", "If-Range": '"old"' } })).status).toBe(200);
  });

  it("answer HEAD with headers only", async () => {
    const { src, file } = await uploaded();
    const res = await request(src, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Length")).toBe(String(file.length));
    expect(res.headers.get("Content-Type")).toBe("image/png");
    expect(await res.text()).toBe("");
  });

  it("caches path no longer than the upload lives", async () => {
    const { path } = await uploaded({ expires_in: "120" });
    const maxAge = Number(/max-age=(\d+)/.exec((await request(path)).headers.get("Cache-Control")!)![1]);
    expect(maxAge).toBeGreaterThan(100);
    expect(maxAge).toBeLessThanOrEqual(120);
  });

  it("redirects a path that is no longer the current file to src", async () => {
    const { data } = await uploaded();
    const res = await request(`/f/${data.id}/Oldname1.png`, { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(res.headers.get("Location")).toBe(data.src);
  });

  it("answers 404 for unknown uploads and a missing stored file", async () => {
    expect((await request("/i/nothing")).status).toBe(404);
    expect((await request("/f/nothing/x.png")).status).toBe(404);
    const { src, data } = await uploaded({}, await uniquePng("lost"));
    await env.FILES.delete(new URL(data.path).pathname.replace(/^\/f\//, "uploads/"));
    const res = await request(src);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ type: "error", errors: expect.any(String) });
  });

  it("marks files of non-public uploads noindex", async () => {
    const unlisted = await uploaded({}, await uniquePng("robots-1"));
    expect((await request(unlisted.src)).headers.get("X-Robots-Tag")).toBe("noindex");
    const pub = await uploaded({ visibility: "public" }, await uniquePng("robots-2"));
    expect((await request(pub.src)).headers.get("X-Robots-Tag")).toBeNull();
  });
});

describe("parseRange", () => {
  it("handles the edge cases", () => {
    expect(parseRange(undefined, 10)).toBeNull();
    expect(parseRange("bytes=0-0", 10)).toEqual({ offset: 0, length: 1 });
    expect(parseRange("bytes=-20", 10)).toEqual({ offset: 0, length: 10 });
    expect(parseRange("bytes=-0", 10)).toBe("unsatisfiable");
    expect(parseRange("bytes=10-", 10)).toBe("unsatisfiable");
    expect(parseRange("bytes=-", 10)).toBeNull();
  });
});

describe("direct page", () => {
  it("shows the file, title and description, escaped", async () => {
    const { direct, data } = await uploaded({ title: "<script>alert(1)</script>", description: 'Fish & "chips"' });
    const res = await request(direct);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("Content-Security-Policy")).toContain("default-src 'none'");
    const html = await res.text();
    expect(html).toContain(`<img src="${data.src}"`);
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).not.toContain("<script>");
    expect(html).toContain("Fish &amp; &quot;chips&quot;");
    expect(html).toContain('<meta name="robots" content="noindex">');
  });

  it("shows a video player for a video, and lets public pages be indexed", async () => {
    const { direct } = await uploaded({ visibility: "public" }, await fixture("tiny/webm.webm"));
    const html = await (await request(direct)).text();
    expect(html).toContain("<video controls");
    expect(html).not.toContain("noindex");
  });

  it("sends visitors of a private upload straight to the file", async () => {
    const { direct, data, account } = await uploaded({ visibility: "private" }, await uniquePng("private-page"));
    const res = await request(direct, { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(res.headers.get("Location")).toBe(data.src);
    expect((await request(data.src.replace(/^https?:\/\/[^/]+/, ""))).status).toBe(200);
    await json(request(`/api/${data.id}`, { key: account.full, method: "DELETE" }));
    expect((await request(direct)).status).toBe(404);
  });
});
