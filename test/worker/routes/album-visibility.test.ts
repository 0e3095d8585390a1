import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../../src/storage/db";
import { accounts, albums, albumUploads, uploads, type AlbumRow, type UploadRow } from "../../../src/model/schema";
import { VISIBILITIES, type Visibility } from "../../../src/model/visibility";
import { hashPassword } from "../../../src/uploads/access/passwords";
import { signAlbumUrl } from "../../../src/uploads/access/signed-links";
import { json, newAccount, request, tamperedSignature } from "../helpers";
import { site } from "./listings-support";

/**
 * The album pages' visibility rule, held on every combination: album visibility x album locked x
 * each state of the one upload in it (visibility x locked x views (none, some left, used up) x
 * expired x deleted, and a file still to be converted). Each album holds its one upload, chosen
 * as its cover, so that the page, its cards, oEmbed and the listings can be checked for that
 * upload alone: none may show of an upload more than its own page shows a visitor, nor anything
 * of a locked album before its password, nor that a private album exists.
 *
 * Rows are written straight to D1 (the states, not the ways to reach them, are under test), each
 * upload's title, description and thumbnail marked with its own key so that a page can be
 * searched for them.
 */

const db = database(env.DB);
const accountId = `albums-${crypto.randomUUID()}`;
const NOW = Date.now();
const PASSWORD = "album password";

type Views = "none" | "left" | "used up";
interface UploadState {
  visibility: Visibility;
  locked: boolean;
  views: Views;
  expired: boolean;
  deleted: boolean;
  converting: boolean;
}
interface Case {
  key: string;
  album: AlbumRow;
  upload: UploadRow;
  state: UploadState;
}

function uploadStates(): UploadState[] {
  const out: UploadState[] = [];
  for (const visibility of VISIBILITIES)
    for (const locked of [false, true])
      for (const views of ["none", "left", "used up"] as const)
        for (const expired of [false, true])
          for (const deleted of [false, true])
            out.push({ visibility, locked, views, expired, deleted, converting: false });
  // A HEIC not yet converted to WebP (never served, and with no thumbnail to show until then).
  for (const visibility of VISIBILITIES)
    out.push({ visibility, locked: false, views: "none", expired: false, deleted: false, converting: true });
  return out;
}

const cases: Case[] = [];
let passwordHash: string;

/** What a visitor holding the album's link may see of its upload, decided here apart from the code. */
function expected(state: UploadState) {
  const shown = state.visibility !== "private" && !state.expired && !state.deleted && state.views !== "used up";
  return {
    /** Its tile (a link to its page). */
    shown,
    /** Its title. */
    title: shown && !state.locked,
    /** Its thumbnail, and as the album's cover in cards, oEmbed and listings. */
    picture: shown && !state.locked && state.views === "none" && !state.converting,
  };
}

beforeAll(async () => {
  passwordHash = await hashPassword(PASSWORD);
  await db.insert(accounts).values({ id: accountId, name: "albums", createdAt: NOW });
  const prefix = crypto.randomUUID().replace(/-/g, "").slice(0, 6);
  let n = 0;
  for (const albumVisibility of VISIBILITIES)
    for (const albumLocked of [false, true])
      for (const state of uploadStates()) {
        const key = `${prefix}k${String(n++).padStart(4, "0")}`;
        const uploadId = `u${key}`;
        const mime = state.converting ? "image/heic" : "image/png";
        const upload: UploadRow = {
          id: uploadId,
          accountId,
          type: "image",
          objectKey: `uploads/${uploadId}/file.${state.converting ? "heic" : "png"}`,
          mime,
          animated: false,
          size: 100,
          etag: `"${uploadId}"`,
          width: 1200,
          height: 800,
          thumbKey: state.converting ? null : `uploads/${uploadId}/thumbmark${key}.webp`,
          contentHash: uploadId,
          dedupHash: null,
          keepOriginal: false,
          title: `utitle${key}`,
          description: `udesc${key}`,
          visibility: state.visibility,
          passwordHash: state.locked ? passwordHash : null,
          maxViews: state.views === "none" ? null : 3,
          views: state.views === "used up" ? 3 : state.views === "left" ? 1 : 0,
          expiresAt: state.expired ? NOW - 60_000 : null,
          filesRemovedAt: null,
          deleteTokenHash: uploadId,
          processingState: "ready",
          processingPercent: 100,
          processingError: null,
          processingUpdatedAt: NOW,
          duration: null,
          ladder: null,
          focalX: null,
          focalY: null,
          placeholder: null,
          color: null,
          createdAt: NOW - n,
          updatedAt: NOW - n,
        };
        const album: AlbumRow = {
          id: `a${key}`,
          accountId,
          title: `atitle${key}`,
          description: `adesc${key}`,
          visibility: albumVisibility,
          passwordHash: albumLocked ? passwordHash : null,
          acceptsUploads: false,
          coverUploadId: uploadId,
          createdAt: NOW - n,
          updatedAt: NOW - n,
        };
        cases.push({ key, album, upload, state });
      }
  const inserts = cases.flatMap(({ album, upload }) => [
    db.insert(uploads).values(upload),
    db.insert(albums).values(album),
    db.insert(albumUploads).values({ albumId: album.id, uploadId: upload.id, position: 0, addedAt: NOW }),
  ]);
  for (let i = 0; i < inserts.length; i += 150) {
    const [first, ...rest] = inserts.slice(i, i + 150);
    await db.batch([first!, ...rest]);
  }
  for (const { upload, state } of cases) if (state.deleted) await db.delete(uploads).where(eq(uploads.id, upload.id));
}, 120_000);

/** Every mark of the case's upload a text may hold: its id, title, description and thumbnail. */
function upload(text: string, key: string) {
  return {
    link: text.includes(`/v/u${key}`),
    title: text.includes(`utitle${key}`),
    description: text.includes(`udesc${key}`),
    picture: text.includes(`thumbmark${key}`) || text.includes(`/i/u${key}`),
  };
}
const albumText = (text: string, key: string) => text.includes(`atitle${key}`) || text.includes(`adesc${key}`);

/** The signed query of a locked album's page links. */
const signedPath = async (album: AlbumRow) =>
  new URL(
    await signAlbumUrl(env.LINK_SIGNING_SECRET, `http://media.test/a/${album.id}`, Date.now(), album.passwordHash!),
  ).search;

/** Runs `check` on every case, a few at a time. */
async function each(check: (c: Case) => Promise<void>) {
  for (let i = 0; i < cases.length; i += 8) await Promise.all(cases.slice(i, i + 8).map(check));
}

describe("an album shows no upload its visitor could not see on its own", () => {
  it("has every combination", () => {
    expect(cases).toHaveLength(VISIBILITIES.length * 2 * (VISIBILITIES.length * 2 * 3 * 2 * 2 + 3));
  });

  it("on its page, in its cards and in its oEmbed answer", async () => {
    await each(async ({ key, album, state }) => {
      const res = await request(`/a/${album.id}`);
      const text = await res.text();
      const marks = upload(text, key);
      const label = `${album.visibility} album${album.passwordHash ? ", locked" : ""}: ${JSON.stringify(state)}`;
      const oembed = await request(`/oembed?url=${encodeURIComponent(`http://media.test/a/${album.id}`)}`);
      const answer = await oembed.text();
      expect(upload(answer, key), label).toMatchObject({ link: false, title: false, description: false });

      if (album.visibility === "private") {
        // As if there were no such album.
        expect(res.status, label).toBe(404);
        expect(albumText(text, key) || Object.values(marks).some(Boolean), label).toBe(false);
        expect(oembed.status, label).toBe(404);
        expect(albumText(answer, key), label).toBe(false);
        return;
      }
      if (album.passwordHash) {
        // The password form, and nothing of the album or its upload.
        expect(res.status, label).toBe(200);
        expect(text, label).toContain('type="password"');
        expect(albumText(text, key) || Object.values(marks).some(Boolean), label).toBe(false);
        expect(text, label).not.toContain("og:");
        expect(text, label).toContain('<meta name="robots" content="noindex">');
        expect(oembed.status, label).toBe(401);
        expect(albumText(answer, key), label).toBe(false);
        return;
      }
      const want = expected(state);
      expect(res.status, label).toBe(200);
      expect(text, label).toContain(`<h1>atitle${key}</h1>`);
      expect(marks, label).toEqual({ link: want.shown, title: want.title, description: false, picture: want.picture });
      const head = text.slice(0, text.indexOf("</head>"));
      expect(head.includes('property="og:image"'), label).toBe(want.picture);
      expect(head.includes('name="twitter:card" content="summary_large_image"'), label).toBe(want.picture);
      expect(head.includes('<meta name="robots" content="noindex">'), label).toBe(album.visibility !== "public");
      expect(res.headers.get("Content-Security-Policy"), label).toContain("script-src 'self'");
      expect(text, label).not.toMatch(/<script>|<script [^>]*>[^<]/);
      expect(oembed.status, label).toBe(200);
      const body = JSON.parse(answer);
      expect(body.type, label).toBe("link");
      expect(body.title, label).toBe(`atitle${key}`);
      expect(!!body.thumbnail_url, label).toBe(want.picture);
    });
  }, 120_000);

  it("on a locked album's page once its password is given (by a signed link), without cards", async () => {
    const locked = cases.filter((c) => c.album.passwordHash && c.album.visibility !== "private");
    for (let i = 0; i < locked.length; i += 8) {
      await Promise.all(
        locked.slice(i, i + 8).map(async ({ key, album, state }) => {
          const label = `${album.visibility} locked album: ${JSON.stringify(state)}`;
          const res = await request(`/a/${album.id}${await signedPath(album)}`);
          const text = await res.text();
          const want = expected(state);
          expect(res.status, label).toBe(200);
          expect(text, label).toContain(`<h1>atitle${key}</h1>`);
          expect(upload(text, key), label).toEqual({
            link: want.shown,
            title: want.title,
            description: false,
            picture: want.picture,
          });
          expect(text, label).not.toContain("og:");
          expect(text, label).toContain('<meta name="robots" content="noindex">');
        }),
      );
    }
  }, 120_000);

  it("in the gallery of albums, the sitemap and the feed", async () => {
    const s = site();
    const pages: string[] = [];
    // Walked as a crawler walks it: onward by each page's next link (a cursor, `?after=`).
    for (let path: string | undefined = "/gallery/albums"; path; ) {
      const text = await (await s.get(path)).text();
      pages.push(text);
      path = /<a rel="next" href="([^"]+)"/.exec(text)?.[1]?.replaceAll("&amp;", "&");
      if (path) expect(path).toMatch(/^\/gallery\/albums\?after=[\w-]+$/);
    }
    expect(pages.length).toBeGreaterThan(1);
    const gallery = pages.join("\n");
    const sitemap = await (await s.get("/sitemap-albums-1.xml")).text();
    const atom = await (await s.get("/feed.atom")).text();
    // The feed holds the newest uploads and albums (the public uploads here are listed by themselves):
    // its albums' entries are checked.
    const entries = atom.split("<entry>").slice(1);
    expect(entries).toHaveLength(50);
    const feed = entries.filter((entry) => /<id>[^<]*\/a\//.test(entry)).join("\n");
    const inFeed = new Set([...feed.matchAll(/\/a\/(a[0-9a-z]+)</g)].map((m) => m[1]));
    expect(inFeed.size).toBeGreaterThan(10);
    for (const { key, album, state } of cases) {
      const label = `${album.visibility} album${album.passwordHash ? ", locked" : ""}: ${JSON.stringify(state)}`;
      const listed = album.visibility === "public";
      const want = expected(state);
      const open = listed && !album.passwordHash;
      for (const [name, text] of [
        ["gallery", gallery],
        ["sitemap", sitemap],
        ...(inFeed.has(album.id) || !listed ? [["feed", feed]] : []),
      ] as const) {
        expect(text.includes(`/a/${album.id}`), `${name}: ${label}`).toBe(listed);
        expect(albumText(text, key), `${name}: ${label}`).toBe(open && name !== "sitemap");
        const marks = upload(text, key);
        // No listing links an album's uploads or names them; a cover's thumbnail only when it may.
        expect(marks, `${name}: ${label}`).toEqual({
          link: false,
          title: false,
          description: false,
          picture: open && name !== "sitemap" && want.picture,
        });
      }
    }
    expect(gallery).toContain("Password-protected album");
  }, 120_000);
});

describe("a locked album's password form", () => {
  it("opens the album with the right password, its page links signed, and refuses a wrong one", async () => {
    const { key, album } = cases.find(
      (c) => c.album.passwordHash && c.album.visibility === "unlisted" && expected(c.state).picture,
    )!;
    const wrong = await request(`/a/${album.id}`, { method: "POST", body: new URLSearchParams({ password: "no" }) });
    expect(wrong.status).toBe(401);
    expect(albumText(await wrong.text(), key)).toBe(false);
    const right = await request(`/a/${album.id}`, {
      method: "POST",
      body: new URLSearchParams({ password: PASSWORD }),
    });
    expect(right.status).toBe(200);
    const text = await right.text();
    expect(text).toContain(`<h1>atitle${key}</h1>`);
    expect(upload(text, key).picture).toBe(true);
    expect(right.headers.get("Cache-Control")).toContain("no-store");
    // A tampered signature is the form again.
    const signed = await signedPath(album);
    const tampered = await request(`/a/${album.id}${tamperedSignature(signed)}`);
    expect(albumText(await tampered.text(), key)).toBe(false);
  });
});

describe("an album's page", () => {
  it("pages a large album, 48 uploads a page, in the album's order", async () => {
    const base = cases.find(
      (c) => c.album.visibility === "unlisted" && !c.album.passwordHash && expected(c.state).picture,
    )!;
    const albumId = `big${crypto.randomUUID().replace(/-/g, "").slice(0, 7)}`;
    await db.insert(albums).values({ ...base.album, id: albumId, coverUploadId: null });
    const ids = Array.from({ length: 50 }, (_, i) => `${albumId}u${String(i).padStart(2, "0")}`);
    const rows = ids.map((id, i) =>
      db.insert(uploads).values({ ...base.upload, id, contentHash: id, createdAt: NOW + i }),
    );
    const places = ids.map((uploadId, position) =>
      db.insert(albumUploads).values({ albumId, uploadId, position, addedAt: NOW }),
    );
    const [first, ...rest] = [...rows, ...places];
    await db.batch([first!, ...rest]);

    const shown = (text: string) => [...text.matchAll(/\/v\/([0-9A-Za-z]+)"/g)].map((m) => m[1]);
    const one = await (await request(`/a/${albumId}`)).text();
    expect(shown(one)).toEqual(ids.slice(0, 48));
    expect(one).toContain("50 uploads, page 1 of 2.");
    // Onward by cursor (the page after the last one shown, read alone), back by number.
    const onward = new RegExp(`<a rel="next" href="(/a/${albumId}\\?after=[\\w-]+)">Next</a>`).exec(one)?.[1];
    expect(onward, one).toBeDefined();
    const two = await (await request(onward!)).text();
    expect(shown(two)).toEqual(ids.slice(48));
    expect(two).toContain("50 uploads, page 2 of 2.");
    expect(two).toContain(`<a rel="prev" href="/a/${albumId}?page=1">Previous</a>`);
    expect(two).not.toContain('rel="next"');
    expect(shown(await (await request(`/a/${albumId}?page=2`)).text())).toEqual(ids.slice(48));
    // Another album's cursor is not this one's.
    expect((await request(onward!.replace(albumId, base.album.id))).status).toBe(422);
    expect(shown(await (await request(`/a/${albumId}?page=3`)).text())).toEqual([]);
    for (const bad of ["0", "x", "1.5"]) expect((await request(`/a/${albumId}?page=${bad}`)).status).toBe(400);
  });

  it("is a 404 for an unknown album, in oEmbed and past the album sitemap's last page", async () => {
    expect((await request("/a/nosuchalbum")).status).toBe(404);
    const oembed = await request(`/oembed?url=${encodeURIComponent("http://media.test/a/nosuchalbum")}`);
    expect(oembed.status).toBe(404);
    expect((await site().get("/sitemap-albums-99.xml")).status).toBe(404);
    expect((await request("/a/nosuchalbum", { method: "PUT" })).status).toBe(405);
  });

  it("answers a private album exactly as an unknown one: its page, its form and oEmbed", async () => {
    const account = await newAccount();
    const made = await json(
      request("/api/albums", { key: account.full, method: "POST", json: { visibility: "private", title: "Hidden" } }),
    );
    const hidden = made.body.data.id as string;
    /** What a visitor learns from an answer: its status, its type and its text without the request's id. */
    const seen = async (res: Response) => ({
      status: res.status,
      type: res.headers.get("Content-Type"),
      text: (await res.text()).replace(/request [\w-]+/g, "request X"),
    });
    const oembed = (id: string) =>
      request(`/oembed?url=${encodeURIComponent(`http://media.test/a/${id}`)}&format=json`);
    const guess = () => new URLSearchParams({ password: "x" });
    for (const [what, send] of [
      ["the page", (id: string) => request(`/a/${id}`)],
      ["the password form", (id: string) => request(`/a/${id}`, { method: "POST", body: guess() })],
      ["oEmbed", oembed],
    ] as const) {
      const unknown = await seen(await send("ZZZZZZZZZZ"));
      expect(unknown.status, what).toBe(404);
      expect(await seen(await send(hidden)), what).toEqual(unknown);
    }
  });
});
