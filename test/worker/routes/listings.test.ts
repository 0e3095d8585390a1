import { describe, expect, it } from "vitest";
import { GALLERY_PAGE_SIZE } from "../../../src/uploads/listings";
import { json, newAccount, request } from "../helpers";
import { idsIn, share, site } from "./listings-support";

describe("the public listings", () => {
  it("list public uploads newest first, and never unlisted or private ones", async () => {
    const account = await newAccount();
    const hidden = [await share(account, "unlisted", {}), await share(account, "private", { visibility: "private" })];
    const older = await share(account, "older", { visibility: "public" });
    const locked = await share(account, "locked", { visibility: "public", password: "pw" });
    const newer = await share(account, "newer", { visibility: "public", description: "The <newest> one" });
    const s = site();
    const direct = (upload: { id: string }) => `${s.origin}/v/${upload.id}`;

    const gallery = await s.get("/gallery");
    expect(gallery.status).toBe(200);
    const html = await gallery.text();
    const listed = idsIn(html);
    expect(listed.slice(0, 3)).toEqual([newer.id, locked.id, older.id]);
    for (const upload of hidden) expect(listed).not.toContain(upload.id);
    expect(html).toContain(`<img src="${s.origin}/t/${newer.id}/`);
    expect(html).toMatch(/ alt="Upload newer" loading="lazy" width="/);
    // A locked upload is listed as its page shows it: no thumbnail of it anywhere.
    expect(html).not.toContain(`/t/${locked.id}/`);
    expect(html).toContain("Password-protected");

    const index = await s.get("/sitemap.xml");
    expect(index.headers.get("Content-Type")).toBe("application/xml; charset=utf-8");
    expect(await index.text()).toMatch(
      /^<\?xml version="1.0" encoding="UTF-8"\?>\n<sitemapindex xmlns="http:\/\/www.sitemaps.org\/schemas\/sitemap\/0.9">/,
    );
    const sitemap = await s.get("/sitemap-1.xml");
    expect(sitemap.headers.get("Content-Type")).toBe("application/xml; charset=utf-8");
    const xml = await sitemap.text();
    expect(xml).toMatch(
      /^<\?xml version="1.0" encoding="UTF-8"\?>\n<urlset xmlns="http:\/\/www.sitemaps.org\/schemas\/sitemap\/0.9">/,
    );
    expect(xml).toContain(`<url><loc>${s.origin}/gallery</loc></url>`);
    expect(xml).toContain(`<url><loc>${direct(newer)}</loc><lastmod>`);
    for (const upload of hidden) expect(idsIn(xml)).not.toContain(upload.id);

    const feed = await s.get("/feed.atom");
    expect(feed.headers.get("Content-Type")).toBe("application/atom+xml; charset=utf-8");
    const atom = await feed.text();
    expect(atom).toContain('<feed xmlns="http://www.w3.org/2005/Atom">');
    const entries = [...atom.matchAll(/<entry>\n<id>([^<]+)<\/id>/g)].map((m) => m[1]);
    expect(entries.slice(0, 3)).toEqual([direct(newer), direct(locked), direct(older)]);
    for (const upload of hidden) expect(idsIn(atom)).not.toContain(upload.id);
    // The entry's HTML is text inside the XML: escaped once, including what the uploader wrote.
    expect(atom).toContain("&lt;p&gt;The &amp;lt;newest&amp;gt; one&lt;/p&gt;");
    expect(atom).not.toContain(`/t/${locked.id}/`);

    // Made private, an upload is in no listing made afterwards.
    await json(
      request(`/api/${newer.id}`, {
        method: "PATCH",
        headers: { "X-API-Key": account.full, "Content-Type": "application/json" },
        body: '{"visibility":"private"}',
      }),
    );
    const after = site();
    expect(idsIn(await (await after.get("/gallery")).text())).not.toContain(newer.id);
    expect(idsIn(await (await after.get("/sitemap-1.xml")).text())).not.toContain(newer.id);
    expect(idsIn(await (await after.get("/feed.atom")).text())).not.toContain(newer.id);
  });

  it("show of a locked upload what its page shows without the password, and nothing of a used-up one", async () => {
    const account = await newAccount();
    const secret = { title: "Scan of my passport", description: "Number 123456789, valid until 2031" };
    const locked = await share(account, "locked-text", { visibility: "public", password: "pw", ...secret });
    const limited = await share(account, "limited-text", {
      visibility: "public",
      max_views: "5",
      title: "Five views",
      description: "Shown on its page",
    });
    const usedUp = await share(account, "used-up-text", {
      visibility: "public",
      max_views: "1",
      title: "One view",
      description: "Seen once already",
    });
    expect((await request(new URL(usedUp.src).pathname)).status).toBe(200);

    // The page of the locked upload, without the password: the form, and neither title nor description.
    const form = await (await request(new URL(locked.direct).pathname)).text();
    expect(form).toContain('type="password"');
    for (const text of Object.values(secret)) expect(form).not.toContain(text);
    // The used-up upload's page says it is gone, and nothing else.
    const gone = await request(new URL(usedUp.direct).pathname);
    expect(gone.status).toBe(410);
    const goneText = await gone.text();
    for (const text of ["One view", "Seen once already"]) expect(goneText).not.toContain(text);

    const s = site();
    const gallery = await (await s.get("/gallery")).text();
    const feed = await (await s.get("/feed.atom")).text();
    const sitemap = await (await s.get("/sitemap-1.xml")).text();
    for (const listing of [gallery, feed]) {
      expect(idsIn(listing)).toContain(locked.id);
      for (const text of Object.values(secret)) expect(listing).not.toContain(text);
      expect(listing).toContain("Password-protected upload");
      // A view-limited upload's page shows its title and description: so may its listing.
      expect(idsIn(listing)).toContain(limited.id);
      expect(listing).toContain("Five views");
      expect(idsIn(listing)).not.toContain(usedUp.id);
      for (const text of ["One view", "Seen once already"]) expect(listing).not.toContain(text);
    }
    expect(feed).toContain("Shown on its page");
    expect(idsIn(sitemap)).not.toContain(usedUp.id);
  });

  it("pages the gallery, with links to newer and older pages", async () => {
    const account = await newAccount();
    const before = idsIn(await (await site().get("/gallery")).text()).length;
    const made: string[] = [];
    for (let i = 0; i < GALLERY_PAGE_SIZE + 1 - before; i++)
      made.push((await share(account, `page-${i}`, { visibility: "public" })).id);
    const s = site();
    const first = await (await s.get("/gallery")).text();
    expect(idsIn(first)).toHaveLength(GALLERY_PAGE_SIZE);
    expect(idsIn(first)[0]).toBe(made.at(-1));
    // Onward by cursor: the next page reads only its own rows however deep it is.
    const onward = /<a rel="next" href="(\/gallery\?after=[\w-]+)">Older<\/a>/.exec(first)?.[1];
    expect(onward, first).toBeDefined();
    expect(first).toContain(`<link rel="next" href="${onward}">`);
    const second = await (await s.get(onward!)).text();
    expect(idsIn(second)).toHaveLength(1);
    expect(second).toContain('<a rel="prev" href="/gallery?page=1">Newer</a>');
    expect(second).toContain(`Page 2 of 2`);
    expect(second).not.toContain('rel="next"');
    // By number it is the same page.
    expect(idsIn(await (await s.get("/gallery?page=2")).text())).toEqual(idsIn(second));
    expect((await json(s.get(`${onward}&page=2`))).status).toBe(400);
    expect((await json(s.get("/gallery?after=nonsense"))).status).toBe(422);
    expect(idsIn(await (await s.get("/gallery?page=9")).text())).toEqual([]);
    for (const bad of ["0", "-1", "x", "1.5"]) {
      expect(await json(s.get(`/gallery?page=${bad}`)), bad).toMatchObject({ status: 400, body: { type: "error" } });
    }
    expect((await request("/robots.txt")).headers.get("Content-Type")).toMatch(/^text\/plain/);
  });
});
