import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { VERSIONED } from "../../../src/http/cache-control";
import { HLS_PATH } from "../../../src/site/player";
import { fixture, newAccount, request, upload } from "../helpers";
import { ladderUpload } from "./hls-support";

/**
 * A video's page with a ladder: its <video> keeps the MP4 and gains the master and the
 * storyboard (signed where its playback is), hls.js and the player load, and the CSP allows
 * what they need. Chromium plays it in test/node/video-player.test.ts.
 */

const attribute = (html: string, name: string) =>
  new RegExp(`${name}="([^"]*)"`).exec(html)?.[1]?.replaceAll("&amp;", "&");
const pathOf = (url: string) => {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
};

describe("a video page with a ladder", () => {
  it("plays the master through hls.js, keeps the MP4 as src and for link previews", async () => {
    const video = await ladderUpload({ visibility: "public" });
    const res = await request(`/v/${video.id}`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(attribute(html, "data-hls")).toBe(`http://media.test/h/${video.id}/master.m3u8`);
    expect(attribute(html, "data-storyboard")).toBe(`http://media.test${video.file("storyboard.vtt")}`);
    expect(html).toMatch(
      new RegExp(`<video controls playsinline preload="none"[^>]* src="http://media.test/i/${video.id}"`),
    );
    expect(html).toContain(`<script src="${HLS_PATH}" defer></script><script src="/assets/player.js" defer></script>`);
    expect(html).toMatch(new RegExp(`<meta property="og:video[^"]*" content="http://media.test/i/${video.id}"`));
    const csp = res.headers.get("Content-Security-Policy")!;
    expect(csp).toContain("media-src 'self' blob:");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toContain("worker-src");
    const assets: [string, string][] = [
      [HLS_PATH, VERSIONED],
      ["/assets/player.js", "public, max-age=3600"],
    ];
    for (const [path, cache] of assets) {
      const asset = await request(path);
      expect(asset.status, path).toBe(200);
      expect(asset.headers.get("Cache-Control"), path).toBe(cache);
      expect(asset.headers.get("Content-Type")).toBe("text/javascript; charset=utf-8");
    }
    expect(await (await request(HLS_PATH)).text()).toContain(".Hls=");
  });

  it("signs a locked video's master and storyboard once the password is given", async () => {
    const video = await ladderUpload({ password: "right" });
    const form = await (await request(`/v/${video.id}`)).text();
    expect(form).not.toContain("data-hls");
    const page = await (
      await request(`/v/${video.id}`, { method: "POST", body: new URLSearchParams({ password: "right" }) })
    ).text();
    const hls = attribute(page, "data-hls")!;
    const storyboard = attribute(page, "data-storyboard")!;
    for (const url of [hls, storyboard]) {
      expect(url).toMatch(/\?exp=\d+&sig=[0-9a-f]{64}$/);
      expect((await request(pathOf(url))).status).toBe(200);
      expect((await request(pathOf(url).split("?")[0]!)).status).toBe(401);
    }
  });

  it("signs a view-limited video's master, and the page itself takes no view", async () => {
    const video = await ladderUpload({ max_views: "3" });
    const page = await (await request(`/v/${video.id}`)).text();
    expect(attribute(page, "data-hls")).toMatch(/\/master\.m3u8\?exp=\d+&sig=/);
    const { views } = (await env.DB.prepare("SELECT views FROM uploads WHERE id = ?")
      .bind(video.id)
      .first<{ views: number }>())!;
    expect(views).toBe(0);
  });
});

describe("a video page without a ladder", () => {
  it("plays the MP4 alone, under the pages' own CSP", async () => {
    const account = await newAccount();
    const { body } = await upload(account.full, await fixture("tiny/webm.webm"));
    const res = await request(`/v/${body.data.id}`);
    const html = await res.text();
    expect(html).toContain('<video controls playsinline preload="metadata"');
    expect(html).not.toContain("data-hls");
    expect(html).not.toContain("/assets/player.js");
    expect(res.headers.get("Content-Security-Policy")).toContain("media-src 'self';");
  });
});
