import { describe, expect, it } from "vitest";
import { GALLERY_PAGE_SIZE } from "../../../src/routes/listings";
import { json, newAccount, request, upload, uniquePng, type TestAccount } from "../helpers";

const idsIn = (text: string) => [...text.matchAll(/\/v\/([0-9A-Za-z]{10})/g)].map((m) => m[1]!);

async function share(account: TestAccount, seed: string, fields: Record<string, string>) {
  const res = await upload(account.full, await uniquePng(seed), { title: `Upload ${seed}`, ...fields });
  expect(res.status).toBe(200);
  return res.body.data as { id: string; direct: string; thumb: string | null };
}

describe("the public listings", () => {
  it("list public uploads newest first, and never unlisted or private ones", async () => {
    const account = await newAccount();
    const hidden = [await share(account, "unlisted", {}), await share(account, "private", { visibility: "private" })];
    const older = await share(account, "older", { visibility: "public" });
    const locked = await share(account, "locked", { visibility: "public", password: "pw" });
    const newer = await share(account, "newer", { visibility: "public", description: "The <newest> one" });

    const gallery = await request("/gallery");
    expect(gallery.status).toBe(200);
    const html = await gallery.text();
    const listed = idsIn(html);
    expect(listed.slice(0, 3)).toEqual([newer.id, locked.id, older.id]);
    for (const upload of hidden) expect(listed).not.toContain(upload.id);
    expect(html).toContain(`<img src="${newer.thumb}" alt="Upload newer" loading="lazy" width="`);
    // A locked upload is listed by its title: no thumbnail of it anywhere.
    expect(html).not.toContain(`/t/${locked.id}/`);
    expect(html).toContain("Password-protected");

    const sitemap = await request("/sitemap.xml");
    expect(sitemap.headers.get("Content-Type")).toBe("application/xml; charset=utf-8");
    const xml = await sitemap.text();
    expect(xml).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<urlset xmlns="http:\/\/www.sitemaps.org\/schemas\/sitemap\/0.9">/);
    expect(xml).toContain(`<url><loc>${newer.direct}</loc><lastmod>`);
    for (const upload of hidden) expect(idsIn(xml)).not.toContain(upload.id);

    const feed = await request("/feed.atom");
    expect(feed.headers.get("Content-Type")).toBe("application/atom+xml; charset=utf-8");
    const atom = await feed.text();
    expect(atom).toContain('<feed xmlns="http://www.w3.org/2005/Atom">');
    const entries = [...atom.matchAll(/<entry>\n<id>([^<]+)<\/id>/g)].map((m) => m[1]);
    expect(entries.slice(0, 3)).toEqual([newer.direct, locked.direct, older.direct]);
    for (const upload of hidden) expect(idsIn(atom)).not.toContain(upload.id);
    // The entry's HTML is text inside the XML: escaped once, including what the uploader wrote.
    expect(atom).toContain("&lt;p&gt;The &amp;lt;newest&amp;gt; one&lt;/p&gt;");
    expect(atom).not.toContain(`/t/${locked.id}/`);

    // Made private, an upload leaves every listing at once.
    await json(request(`/api/${newer.id}`, { method: "PATCH", headers: { "X-API-Key": account.full, "Content-Type": "application/json" }, body: '{"visibility":"private"}' }));
    expect(idsIn(await (await request("/gallery")).text())).not.toContain(newer.id);
    expect(idsIn(await (await request("/sitemap.xml")).text())).not.toContain(newer.id);
  });

  it("pages the gallery, with links to newer and older pages", async () => {
    const account = await newAccount();
    const before = idsIn(await (await request("/gallery")).text()).length;
    const made: string[] = [];
    for (let i = 0; i < GALLERY_PAGE_SIZE + 1 - before; i++) made.push((await share(account, `page-${i}`, { visibility: "public" })).id);
    const first = await (await request("/gallery")).text();
    expect(idsIn(first)).toHaveLength(GALLERY_PAGE_SIZE);
    expect(idsIn(first)[0]).toBe(made.at(-1));
    expect(first).toContain('<a rel="next" href="/gallery?page=2">Older</a>');
    const second = await (await request("/gallery?page=2")).text();
    expect(idsIn(second)).toHaveLength(1);
    expect(second).toContain('<a rel="prev" href="/gallery?page=1">Newer</a>');
    expect(second).not.toContain('rel="next"');
    expect(idsIn(await (await request("/gallery?page=9")).text())).toEqual([]);
    for (const bad of ["0", "-1", "x", "1.5"]) {
      expect(await json(request(`/gallery?page=${bad}`)), bad).toMatchObject({ status: 400, body: { type: "error" } });
    }
    expect((await request("/robots.txt")).headers.get("Content-Type")).toMatch(/^text\/plain/);
  });
});
