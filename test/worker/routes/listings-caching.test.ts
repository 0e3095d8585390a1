import { describe, expect, it } from "vitest";
import { newAccount, request, json } from "../helpers";
import { idsIn, share, site } from "./listings-support";

/**
 * The listings are open to anyone at any rate: each is kept in the colo's cache for a minute
 * (and as long by browsers), what misses the cache is throttled per client, and the sitemap is
 * read a page at a time.
 */

const LISTINGS = ["/gallery", "/sitemap.xml", "/sitemap-1.xml", "/feed.atom"];

describe("the listings under load", () => {
  it("are kept for a minute at most: a hidden upload leaves them within it", async () => {
    const account = await newAccount();
    const shown = await share(account, "cached", { visibility: "public" });
    const s = site();
    const listed = async (path: string) => {
      const res = await s.get(path);
      expect(res.status, path).toBe(200);
      return { cacheControl: res.headers.get("Cache-Control"), text: await res.text() };
    };
    const sitemapLists = (text: string) => text.includes(`${s.origin}/sitemap-1.xml`);

    for (const path of LISTINGS) {
      const { cacheControl, text } = await listed(path);
      expect(cacheControl, path).toBe("public, max-age=60");
      expect(path === "/sitemap.xml" ? sitemapLists(text) : idsIn(text).includes(shown.id), path).toBe(true);
    }
    expect(
      (
        await json(
          request(`/api/${shown.id}`, {
            key: account.full,
            method: "PATCH",
            headers: { "Content-Type": "application/json" },
            body: '{"visibility":"unlisted"}',
          }),
        )
      ).status,
    ).toBe(200);

    // Half a minute later: the copies made before the change, fresh for the other half.
    s.clock.now += 30_000;
    for (const path of LISTINGS) {
      const { cacheControl, text } = await listed(path);
      expect(cacheControl, path).toBe("public, max-age=30");
      if (path !== "/sitemap.xml") expect(idsIn(text), path).toContain(shown.id);
    }
    // A request with credentials is answered afresh, and leaves no copy behind.
    for (const headers of [
      { Cookie: "session=1" },
      { Authorization: "Bearer x" },
      { "X-API-Key": account.full },
    ] as Record<string, string>[]) {
      const res = await s.get("/feed.atom", headers);
      expect(idsIn(await res.text()), JSON.stringify(headers)).not.toContain(shown.id);
    }
    expect(idsIn((await listed("/feed.atom")).text)).toContain(shown.id);

    // A minute after they were made, they are made again.
    s.clock.now += 30_001;
    for (const path of LISTINGS) {
      const { cacheControl, text } = await listed(path);
      expect(cacheControl, path).toBe("public, max-age=60");
      expect(idsIn(text), path).not.toContain(shown.id);
    }
  });

  it("throttle a client's requests that the cache cannot answer", async () => {
    const s = site();
    for (let page = 1; page <= 60; page++)
      expect((await s.get(`/gallery?page=${page}`)).status, `page ${page}`).toBe(200);
    const refused = await s.get("/gallery?page=61");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("Retry-After")).toBe("1");
    expect(refused.headers.get("Cache-Control")).toBe("private, no-store");
    expect(((await refused.json()) as { type: string }).type).toBe("error");
    // What the cache holds costs nothing.
    expect((await s.get("/gallery?page=1")).status).toBe(200);
    expect((await s.get("/gallery?page=1&other=1")).status).toBe(200);
    // Another client has its own allowance; a second later this one has one more.
    expect((await site().get("/gallery?page=61")).status).toBe(200);
    s.clock.now += 1_000;
    expect((await s.get("/gallery?page=61")).status).toBe(200);
  });

  it("split the sitemap into pages listed by an index, as the sitemap protocol has it", async () => {
    const account = await newAccount();
    const newest = await share(account, "sitemap-page", { visibility: "public" });
    const s = site();
    const index = await (await s.get("/sitemap.xml")).text();
    const listed = [...index.matchAll(/<sitemap><loc>([^<]+)<\/loc><\/sitemap>/g)].map((m) => m[1]!);
    // The uploads' pages, then the public albums' (of this runtime's other files), if there are any.
    const pages = listed.filter((url) => !url.includes("/sitemap-albums-"));
    const albumPages = listed.slice(pages.length);
    expect(pages.length).toBeGreaterThanOrEqual(1);
    expect(pages).toEqual(pages.map((_, i) => `${s.origin}/sitemap-${i + 1}.xml`));
    expect(albumPages).toEqual(albumPages.map((_, i) => `${s.origin}/sitemap-albums-${i + 1}.xml`));
    expect(index).toMatch(/<\/sitemapindex>\n$/);

    const first = await (await s.get("/sitemap-1.xml")).text();
    const urls = [...first.matchAll(/<url><loc>([^<]+)<\/loc>/g)].map((m) => m[1]);
    expect(urls[0]).toBe(`${s.origin}/gallery`);
    expect(urls).toContain(`${s.origin}/v/${newest.id}`);
    expect(urls.length).toBeLessThanOrEqual(5_001);

    for (const missing of [`/sitemap-${pages.length + 1}.xml`, "/sitemap-0.xml", "/sitemap-01.xml", "/sitemap-x.xml"]) {
      const res = await s.get(missing);
      expect(res.status, missing).toBe(404);
      expect(res.headers.get("Cache-Control"), missing).toBe("private, no-store");
    }
  });
});
