import { env } from "cloudflare:workers";
import HLS from "hls-parser";
import type { MasterPlaylist, MediaPlaylist } from "hls-parser/types";
import { describe, expect, it } from "vitest";
import { SIGNED_LINK_SECONDS } from "../../../src/uploads/access/signed-links";
import { json, request, tamperedSignature } from "../helpers";
import { DURATION, LADDER_FILES, ladderUpload, MEDIA_BYTES, signed, STORYBOARD, urisOf } from "./hls-support";

/**
 * The HLS routes on a hand-written ladder (hls-support.ts): the master's and the other files'
 * URLs, their headers, the admission of restricted uploads (signed links, one view a playback),
 * and the answers to whatever else is asked.
 */

const text = async (path: string, init?: RequestInit) => {
  const res = await request(path, init);
  // Decoded by hand: workerd warns of .text() on a type it does not know as text.
  return { res, body: new TextDecoder().decode(await res.arrayBuffer()) };
};

/** The path and query of a URI as the page at `base` resolves it. */
const resolved = (uri: string, base: string) => {
  const url = new URL(uri, `http://media.test${base}`);
  return `${url.pathname}${url.search}`;
};

const views = async (id: string) =>
  (await env.DB.prepare("SELECT views FROM uploads WHERE id = ?").bind(id).first<{ views: number }>())!.views;

describe("an open ladder", () => {
  it("serves the master with every URI leading into the current ladder, kept briefly", async () => {
    const video = await ladderUpload({ visibility: "public" });
    const { res, body } = await text(video.master);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("application/vnd.apple.mpegurl");
    expect(res.headers.get("Cache-Control")).toBe("public, max-age=15");
    expect(res.headers.get("X-Robots-Tag")).toBeNull();
    expect(res.headers.get("Access-Control-Allow-Origin")).toBe("*");
    const master = HLS.parse(body) as MasterPlaylist;
    expect(master.isMasterPlaylist).toBe(true);
    expect(master.variants.map((v) => v.uri)).toEqual([`${video.ladder}/360p.m3u8`, `${video.ladder}/240p.m3u8`]);
    expect(master.variants[0]!.bandwidth).toBe(900000);
    expect(master.variants[0]!.resolution).toEqual({ width: 640, height: 360 });
    for (const variant of master.variants) {
      const rung = await text(resolved(variant.uri, video.master));
      expect(rung.res.status).toBe(200);
      const playlist = HLS.parse(rung.body) as MediaPlaylist;
      expect(playlist.targetDuration).toBe(4);
      expect(playlist.segments.map((s) => s.byterange)).toEqual([
        { length: 400, offset: 100 },
        { length: 300, offset: 500 },
      ]);
      expect(playlist.segments[0]!.map).toMatchObject({ byterange: { length: 100, offset: 0 } });
    }
  });

  it("serves every other file as stored: immutable, with Range, ETag, CORS and noindex for an unlisted upload", async () => {
    const video = await ladderUpload();
    for (const name of ["360p.m3u8", "storyboard.vtt", "360p.mp4", "storyboard.webp"]) {
      const res = await request(video.file(name));
      expect(res.status, name).toBe(200);
      expect(res.headers.get("Cache-Control"), name).toBe("private, max-age=31536000, immutable");
      expect(res.headers.get("X-Robots-Tag"), name).toBe("noindex");
      expect(res.headers.get("Access-Control-Allow-Origin"), name).toBe("*");
      const stored = LADDER_FILES[name]!;
      const bytes = new Uint8Array(await res.arrayBuffer());
      expect(bytes).toEqual(typeof stored === "string" ? new TextEncoder().encode(stored) : stored);
    }
    const types = { "360p.m3u8": "application/vnd.apple.mpegurl", "storyboard.vtt": "text/vtt; charset=utf-8" };
    for (const [name, type] of Object.entries(types))
      expect((await request(video.file(name))).headers.get("Content-Type")).toBe(type);
    const part = await request(video.file("240p.mp4"), { headers: { Range: "bytes=100-499" } });
    expect(part.status).toBe(206);
    expect(part.headers.get("Content-Type")).toBe("video/mp4");
    expect(part.headers.get("Content-Range")).toBe(`bytes 100-499/${MEDIA_BYTES}`);
    expect(part.headers.get("Access-Control-Expose-Headers")).toBe("Content-Length,Content-Range,Accept-Ranges");
    expect(new Uint8Array(await part.arrayBuffer())).toEqual((LADDER_FILES["240p.mp4"] as Uint8Array).slice(100, 500));
    const etag = part.headers.get("ETag")!;
    expect((await request(video.file("240p.mp4"), { headers: { "If-None-Match": etag } })).status).toBe(304);
    const head = await request(video.master, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect((await head.arrayBuffer()).byteLength).toBe(0);
  });

  it("answers a player's preflight", async () => {
    const video = await ladderUpload();
    const res = await request(video.file("360p.mp4"), {
      method: "OPTIONS",
      headers: {
        Origin: "https://player.example",
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "range",
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBe("*");
    expect(res.headers.get("Access-Control-Allow-Methods")).toBe("GET,HEAD");
    expect(res.headers.get("Access-Control-Allow-Headers")).toBe("Range");
  });
});

describe("what is not a file of the current ladder", () => {
  it("answers 404 with the envelope, 405 to other methods", async () => {
    const video = await ladderUpload();
    const missing = [
      `/h/${video.id}/Zz99Yy88.mp4/360p.m3u8`,
      video.file("720p.m3u8"),
      video.file("master.m3u8"),
      video.file("..%2F..%2Fmaster.m3u8"),
      `/h/${video.id}/..%2F${video.ladder}/360p.mp4`,
      video.file(`${"a".repeat(300)}.mp4`),
      `/h/${video.id}/${"x".repeat(5000)}/360p.mp4`,
      `/h/${"n".repeat(40)}/master.m3u8`,
      "/h/nosuchid1/master.m3u8",
    ];
    for (const path of missing) {
      const res = await json(request(path));
      expect(res.status, path).toBe(404);
      expect(res.body.type, path).toBe("error");
      expect(res.headers.get("Cache-Control"), path).toBe("private, no-store");
    }
    for (const method of ["POST", "PUT", "DELETE"]) {
      for (const path of [video.master, video.file("360p.mp4")]) {
        const res = await request(path, { method });
        expect(res.status, `${method} ${path}`).toBe(405);
        expect(res.headers.get("Allow")).toBe("GET, HEAD");
      }
    }
  });

  it("has no master for an upload without a ladder, a deleted one or an expired one", async () => {
    const video = await ladderUpload();
    await env.DB.prepare("UPDATE uploads SET ladder = NULL WHERE id = ?").bind(video.id).run();
    expect((await request(video.master)).status).toBe(404);
    expect((await request(video.file("360p.mp4"))).status).toBe(404);
    const expired = await ladderUpload();
    await env.DB.prepare("UPDATE uploads SET expires_at = ? WHERE id = ?")
      .bind(Date.now() - 1000, expired.id)
      .run();
    for (const path of [expired.master, expired.file("360p.mp4"), expired.file("360p.m3u8")])
      expect((await request(path)).status, path).toBe(404);
    const deleted = await ladderUpload();
    expect((await request(deleted.file("360p.mp4"))).status).toBe(200);
    await json(request(`/api/${deleted.id}`, { key: deleted.account.full, method: "DELETE" }));
    for (const path of [deleted.master, deleted.file("360p.mp4")]) expect((await request(path)).status, path).toBe(404);
  });
});

/** Each restricted kind of upload: its fields at upload, and whether its playback is signed. */
const KINDS = ["public", "unlisted", "private"].flatMap((visibility) =>
  [false, true].flatMap((locked) =>
    [false, true].map((limited) => ({
      name: `${visibility}${locked ? ", locked" : ""}${limited ? ", view-limited" : ""}`,
      fields: {
        visibility,
        ...(locked ? { password: "correct horse" } : {}),
        ...(limited ? { max_views: "1000" } : {}),
      },
      signedPlayback: visibility === "private" || locked || limited,
    })),
  ),
);

describe("admission", () => {
  it.each(KINDS)("$name: unsigned, signed, tampered and expired links to every file", async (kind) => {
    const video = await ladderUpload(kind.fields);
    const paths = [video.master, ...["360p.m3u8", "360p.mp4", "storyboard.vtt", "storyboard.webp"].map(video.file)];
    for (const path of paths) {
      const good = await signed(path);
      const cases: [string, string, number][] = [
        ["unsigned", path, kind.signedPlayback ? 401 : 200],
        ["signed", good, 200],
        ["tampered", tamperedSignature(good), kind.signedPlayback ? 403 : 200],
        ["expired", await signed(path, 600, Date.now() - 3600_000), kind.signedPlayback ? 403 : 200],
      ];
      for (const [what, url, status] of cases) {
        const res = await request(url);
        expect(res.status, `${what} ${url}`).toBe(status);
        if (status === 200 && kind.signedPlayback) expect(res.headers.get("Cache-Control")).toBe("private, no-store");
        await res.arrayBuffer();
      }
    }
  });

  it("signs every URI of a signed playback for its own path, for the playback's length, and they play", async () => {
    const video = await ladderUpload({ password: "correct horse" });
    const now = Math.floor(Date.now() / 1000);
    const { body } = await text(await signed(video.master));
    const master = HLS.parse(body) as MasterPlaylist;
    expect(master.variants).toHaveLength(2);
    for (const variant of master.variants) {
      const url = new URL(variant.uri, "http://media.test/h/x/");
      const exp = Number(url.searchParams.get("exp"));
      expect(exp - now).toBeGreaterThanOrEqual(SIGNED_LINK_SECONDS + 2 * DURATION - 2);
      expect(exp - now).toBeLessThanOrEqual(SIGNED_LINK_SECONDS + 2 * DURATION + 2);
      const rungPath = resolved(variant.uri, video.master);
      const rung = await text(rungPath);
      expect(rung.res.status).toBe(200);
      const uris = urisOf(rung.body);
      expect(uris).toHaveLength(3);
      expect(rung.body).toContain('BYTERANGE="100@0"');
      expect(rung.body).toContain("#EXT-X-BYTERANGE:400@100");
      for (const uri of uris) {
        expect(uri).toMatch(/^\d+p\.mp4\?exp=\d+&sig=[0-9a-f]{64}$/);
        const segment = await request(resolved(uri, rungPath), { headers: { Range: "bytes=100-499" } });
        expect(segment.status).toBe(206);
        await segment.arrayBuffer();
      }
      // A signature opens only its own path: the 360p file's does not open the 240p file.
      const other = resolved(uris[0]!, rungPath).replace(
        /\/(\d+)p\.mp4/,
        (_m, p) => `/${p === "360" ? "240" : "360"}p.mp4`,
      );
      expect((await request(other)).status).toBe(403);
    }
    const vttPath = await signed(video.file("storyboard.vtt"));
    const vtt = await text(vttPath);
    expect(vtt.res.headers.get("Content-Type")).toBe("text/vtt; charset=utf-8");
    expect(vtt.body.split("\n").length).toBe(STORYBOARD.split("\n").length);
    for (const uri of urisOf(vtt.body)) {
      expect(uri).toMatch(/^storyboard\.webp\?exp=\d+&sig=[0-9a-f]{64}#xywh=\d+,0,160,90$/);
      expect((await request(resolved(uri.split("#")[0]!, vttPath))).status).toBe(200);
    }
  });

  it("takes one view a playback, at the master only, and answers 410 once they are used up", async () => {
    const video = await ladderUpload({ max_views: "2" });
    const master = await signed(video.master);
    expect((await request(master, { method: "HEAD" })).status).toBe(200);
    expect(await views(video.id)).toBe(0);
    for (let playback = 1; playback <= 2; playback++) {
      const { body } = await text(master);
      const rungPath = resolved((HLS.parse(body) as MasterPlaylist).variants[1]!.uri, video.master);
      for (let i = 0; i < 3; i++) {
        const rung = await text(rungPath);
        for (const uri of urisOf(rung.body)) await (await request(resolved(uri, rungPath))).arrayBuffer();
      }
      await (await request(await signed(video.file("storyboard.webp")))).arrayBuffer();
      expect(await views(video.id)).toBe(playback);
    }
    expect((await request(master)).status).toBe(410);
    expect((await request(await signed(video.file("360p.mp4")))).status).toBe(410);
    expect(await views(video.id)).toBe(2);
  });
});
