import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { SIGNED_LINK_SECONDS, signAlbumUrl, signUrl } from "../../../src/uploads/access/signed-links";
import {
  clockedApp,
  json,
  newAccount,
  ORIGIN,
  ownNetwork,
  request,
  type TestAccount,
  uniquePng,
  upload,
} from "../helpers";

/**
 * A locked album's page: its signed links (tied to the album's password as it is, and to album
 * pages alone), their expiry, and the throttle on guesses at its password (one per album).
 */

async function lockedAlbum(account: TestAccount, password: string, title = "Behind a password") {
  const res = await json(request("/api/albums", { key: account.full, method: "POST", json: { title, password } }));
  expect(res.status).toBe(200);
  return res.body.data.id as string;
}

const setPassword = async (account: TestAccount, album: string, password: string) =>
  expect(
    (await request(`/api/albums/${album}`, { key: account.full, method: "PATCH", json: { password } })).status,
  ).toBe(200);

/** `path` signed (`?exp=…&sig=…`) as the album's page signs its links at `now`, for its password as it is. */
async function signedFor(album: string, path: string, now = Date.now()) {
  const row = await env.DB.prepare("SELECT password_hash FROM albums WHERE id = ?")
    .bind(album)
    .first<{ password_hash: string }>();
  return new URL(await signAlbumUrl(env.LINK_SIGNING_SECRET, `${ORIGIN}${path}`, now, row!.password_hash)).search;
}

/** The query the album's page signs its links with at `now`. */
const albumLink = (album: string, now = Date.now()) => signedFor(album, `/a/${album}`, now);

/** Whether an answer is the album's page (its title), rather than the password form. */
const opened = async (res: Response, title = "Behind a password") => {
  const text = await res.text();
  expect(res.status).toBe(200);
  if (text.includes(`<h1>${title}</h1>`)) return true;
  expect(text).toContain('type="password"');
  return false;
};

describe("a locked album's signed links", () => {
  it("stop opening its page as soon as its password changes, or is removed and set again", async () => {
    const account = await newAccount();
    const album = await lockedAlbum(account, "first password");
    const first = await albumLink(album);
    expect(await opened(await request(`/a/${album}${first}`))).toBe(true);
    await setPassword(account, album, "second password");
    expect(await opened(await request(`/a/${album}${first}`))).toBe(false);
    const second = await albumLink(album);
    expect(await opened(await request(`/a/${album}${second}`))).toBe(true);
    // The same password set again is a new state: the links of the first stay refused.
    await setPassword(account, album, "");
    await setPassword(account, album, "first password");
    expect(await opened(await request(`/a/${album}${first}`))).toBe(false);
    expect(await opened(await request(`/a/${album}${second}`))).toBe(false);
    // Still open to the password.
    const right = await request(`/a/${album}`, {
      method: "POST",
      body: new URLSearchParams({ password: "first password" }),
      ip: `${ownNetwork()}::1`,
    });
    expect(await opened(right)).toBe(true);
  });

  it("are apart from file links: neither signature opens the other", async () => {
    const account = await newAccount();
    const album = await lockedAlbum(account, "a password");
    const fileSigned = new URL(await signUrl(env.LINK_SIGNING_SECRET, `${ORIGIN}/a/${album}`, Date.now())).search;
    expect(await opened(await request(`/a/${album}${fileSigned}`))).toBe(false);
    // Nor does an album page's signature open a locked upload's file.
    const file = (await upload(account.full, await uniquePng("locked-file"), { password: "a password" })).body.data;
    const path = new URL(file.path).pathname;
    expect((await request(path + (await signedFor(album, path)))).status).toBe(403);
    expect((await request(file.path)).status).toBe(200);
  });

  it("expire: the page opens until the link's expiry, and is the form once it has passed", async () => {
    const account = await newAccount();
    const album = await lockedAlbum(account, "a password");
    const { clock, call } = clockedApp();
    const link = await albumLink(album, clock.now);
    clock.now += SIGNED_LINK_SECONDS * 1000 - 1000;
    expect(await opened(await call(`/a/${album}${link}`))).toBe(true);
    clock.now += 2000;
    const expired = await call(`/a/${album}${link}`);
    const text = await expired.clone().text();
    expect(await opened(expired)).toBe(false);
    expect(text).toContain("The link has expired");
  });
});

describe("guesses at a locked album's password", () => {
  it("are throttled per album: one album's wrong guesses hold back no other album", async () => {
    const account = await newAccount();
    const [one, two] = [await lockedAlbum(account, "one's password"), await lockedAlbum(account, "two's password")];
    // A clock that stands still: no back-off runs out between the requests.
    const { call } = clockedApp();
    const ip = `${ownNetwork()}::1`;
    const guess = (album: string, password: string) =>
      call(`/a/${album}`, { method: "POST", body: new URLSearchParams({ password }), ip });
    for (let i = 0; i < 5; i++) expect((await guess(one, "wrong")).status).toBe(401);
    expect((await guess(one, "wrong")).status).toBe(429);
    expect((await guess(one, "one's password")).status).toBe(429);
    expect((await guess(two, "wrong")).status).toBe(401);
    expect(await opened(await guess(two, "two's password"))).toBe(true);
  });
});
