import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { database } from "../../../src/storage/db";
import { searchUploads } from "../../../src/storage/upload-search";
import {
  clockedApp,
  json,
  newAccount,
  nextMillisecond,
  ORIGIN,
  request,
  type TestAccount,
  uniquePng,
  upload,
} from "../helpers";
import { hookUrl } from "../webhooks/endpoint-rows";
import { type Browser, browser, csrfOf, join } from "./browser-session";

/**
 * The dashboard's pages and what they act through: /app/api, the API's own routes answering the
 * signed-in session as the account's full key (and nothing else: no key, no other site), the
 * account's keys rotated through the API, the grid's search, and every page of another account's
 * id a 404 that shows nothing of it. test/node/dashboard.test.ts runs the pages' forms in Chromium.
 */

interface SignedIn {
  account: TestAccount;
  b: Browser;
  csrf: string;
}

/** A new account, signed in through the link its full key makes (POST /api/sign-in-links). */
async function signedIn(): Promise<SignedIn> {
  const account = await newAccount();
  const link = await json(request("/api/sign-in-links", { method: "POST", key: account.full }));
  expect(link.status).toBe(201);
  const b = browser();
  const joined = await join(b, new URL(link.body.data.url).pathname);
  expect(joined.status, JSON.stringify(joined.body)).toBe(200);
  return { account, b, csrf: await csrfOf(b) };
}

/** A request to /app/api as the signed-in browser's pages send it (its cookie, Origin and CSRF token). */
function appApi(s: SignedIn, path: string, init: RequestInit & { json?: unknown } = {}) {
  const { json: body, headers, ...rest } = init;
  return request(`/app/api${path}`, {
    ...rest,
    ip: s.b.ip,
    ...(body === undefined ? {} : { json: body }),
    headers: { Origin: ORIGIN, Cookie: s.b.cookie!, "X-CSRF-Token": s.csrf, ...(headers as Record<string, string>) },
  });
}

const pageOf = (s: SignedIn, path: string) =>
  request(path, { ip: s.b.ip, headers: { Cookie: s.b.cookie! }, redirect: "manual" });

async function newUpload(account: TestAccount, fields: Record<string, string> = {}) {
  const res = await upload(account.full, await uniquePng(Math.random()), { allow_duplicate: "1", ...fields });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as { id: string; title: string | null };
}

describe("/app/api", () => {
  it("is the API as the signed-in account, with the full key's rights", async () => {
    const s = await signedIn();
    const made = await newUpload(s.account, { title: "Mine" });
    const list = await json(appApi(s, ""));
    expect(list.status).toBe(200);
    expect(list.body.data.map((u: { id: string }) => u.id)).toEqual([made.id]);

    const changed = await json(
      appApi(s, `/${made.id}`, { method: "PATCH", json: { title: "Renamed", visibility: "private" } }),
    );
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    // The change is the API's: read back with the key.
    const read = await json(request(`/api/${made.id}`, { key: s.account.full }));
    expect(read.body.data).toMatchObject({ title: "Renamed", visibility: "private" });
    // A refusal is the API's own envelope, and changes nothing.
    const refused = await json(appApi(s, `/${made.id}`, { method: "PATCH", json: { visibility: "everyone" } }));
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({ type: "error", errors: expect.stringContaining("visibility") });
    expect((await json(request(`/api/${made.id}`, { key: s.account.full }))).body.data.visibility).toBe("private");
  });

  it("answers no request without the session, or with a key alone, or from another site, or without the token", async () => {
    const s = await signedIn();
    const made = await newUpload(s.account);
    const path = `/app/api/${made.id}`;
    const patch = { method: "PATCH", json: { title: "x" }, ip: s.b.ip };
    // No cookie: a 401, even with the account's full key.
    expect((await request(path, { key: s.account.full })).status).toBe(401);
    // Another site's page: refused before the cookie is read.
    const foreign = await request(path, {
      ...patch,
      headers: { Origin: "https://evil.example", Cookie: s.b.cookie!, "X-CSRF-Token": s.csrf },
    });
    expect(foreign.status).toBe(403);
    // Our Origin, the cookie, no token (a form another site posts through a same-site route): refused.
    const tokenless = await request(path, { ...patch, headers: { Origin: ORIGIN, Cookie: s.b.cookie! } });
    expect(tokenless.status).toBe(403);
    const wrongToken = await request(path, {
      ...patch,
      headers: { Origin: ORIGIN, Cookie: s.b.cookie!, "X-CSRF-Token": `${s.csrf}x` },
    });
    expect(wrongToken.status).toBe(403);
    expect((await json(request(`/api/${made.id}`, { key: s.account.full }))).body.data.title).toBeNull();
    // No CORS: the answer carries no Access-Control-Allow-Origin, so no other site reads it.
    const read = await appApi(s, `/${made.id}`, { headers: { Origin: "https://evil.example" } });
    expect(read.headers.get("Access-Control-Allow-Origin")).toBeNull();
  });

  it("shows nothing of another account's upload, album or endpoint", async () => {
    const s = await signedIn();
    const other = await newAccount();
    const theirs = await newUpload(other, { title: "Secret holiday" });
    expect((await appApi(s, `/${theirs.id}`)).status).toBe(404);
    expect((await appApi(s, `/${theirs.id}`, { method: "DELETE" })).status).toBe(404);
    expect((await json(request(`/api/${theirs.id}`, { key: other.full }))).status).toBe(200);
  });

  it("rotates a key: the old one is refused at once, the new one works", async () => {
    const s = await signedIn();
    for (const kind of ["upload", "full"] as const) {
      const old = s.account[kind];
      const rotated = await json(appApi(s, "/keys/rotate", { method: "POST", json: { kind } }));
      expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
      const key = rotated.body.data.key as string;
      expect(key.startsWith(kind === "full" ? "fk_" : "uk_")).toBe(true);
      expect((await request("/api/usage", { key: old })).status).toBe(401);
      expect((await request("/api/usage", { key })).status).toBe(200);
      s.account[kind] = key;
    }
    // The API's own route: the full key rotates itself; the upload-only key may not; a bad kind is a 422.
    const byKey = await json(
      request("/api/keys/rotate", { method: "POST", key: s.account.full, json: { kind: "full" } }),
    );
    expect(byKey.status).toBe(200);
    expect(
      (await request("/api/keys/rotate", { method: "POST", key: s.account.upload, json: { kind: "upload" } })).status,
    ).toBe(401);
    const bad = await json(
      request("/api/keys/rotate", { method: "POST", key: byKey.body.data.key, json: { kind: "admin" } }),
    );
    expect(bad.status).toBe(422);
    expect(await (await pageOf(s, "/app")).text()).toContain("Uploads");
  });

  it("takes a tus upload, whose URL stays under /app/api", async () => {
    const s = await signedIn();
    const bytes = await uniquePng(Math.random());
    const created = await appApi(s, "/tus", {
      method: "POST",
      headers: {
        "Tus-Resumable": "1.0.0",
        "Upload-Length": String(bytes.length),
        "Upload-Metadata": `filename ${btoa("a.png")}`,
      },
    });
    expect(created.status).toBe(201);
    const location = new URL(created.headers.get("Location")!);
    expect(location.pathname).toMatch(/^\/app\/api\/tus\/[A-Za-z0-9]+$/);
    const sent = await appApi(s, location.pathname.slice("/app/api".length), {
      method: "PATCH",
      body: bytes,
      headers: { "Tus-Resumable": "1.0.0", "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream" },
    });
    expect(sent.status).toBe(204);
    const id = sent.headers.get("X-Upload-Id")!;
    expect((await request(`/api/${id}`, { key: s.account.full })).status).toBe(200);
  });
});

describe("the dashboard's pages", () => {
  it("list the account's uploads, searched by title and filtered by type and visibility, and nobody else's", async () => {
    const s = await signedIn();
    const other = await newAccount();
    await newUpload(other, { title: "Beach, not mine" });
    const beach = await newUpload(s.account, { title: "Beach day", visibility: "public" });
    const city = await newUpload(s.account, { title: "City 100%_ night", visibility: "private" });
    const grid = await (await pageOf(s, "/app")).text();
    expect(grid).toContain(`/app/uploads/${beach.id}`);
    expect(grid).toContain(`/app/uploads/${city.id}`);
    expect(grid).not.toContain("not mine");

    const searched = await (await pageOf(s, "/app?q=beach")).text();
    expect(searched).toContain(beach.id);
    expect(searched).not.toContain(city.id);
    // LIKE's wildcards are taken as they are.
    const literal = await (await pageOf(s, `/app?q=${encodeURIComponent("100%_")}`)).text();
    expect(literal).toContain(city.id);
    expect(await (await pageOf(s, "/app?q=%25")).text()).not.toContain(beach.id);
    const privateOnes = await (await pageOf(s, "/app?visibility=private")).text();
    expect(privateOnes).toContain(city.id);
    expect(privateOnes).not.toContain(beach.id);
    expect(await (await pageOf(s, "/app?type=video")).text()).not.toContain(beach.id);

    // A bad filter is said on the page, and lists nothing.
    const bad = await pageOf(s, "/app?type=sound");
    expect(bad.status).toBe(422);
    expect(await bad.text()).toContain("Type: image or video.");
  });

  it("show another account's upload, album or webhook endpoint as not found, and nothing of it", async () => {
    const s = await signedIn();
    const other = await newAccount();
    const theirs = await newUpload(other, { title: "Secret holiday" });
    const album = await json(
      request("/api/albums", { method: "POST", key: other.full, json: { title: "Secret album" } }),
    );
    const paths = [
      `/app/uploads/${theirs.id}`,
      `/app/albums/${album.body.data.id}`,
      `/app?album=${album.body.data.id}`,
      "/app/webhooks/wh_notmine0000",
      "/app/uploads/nonsense",
    ];
    for (const path of paths) {
      const res = await pageOf(s, path);
      expect([404, 422], path).toContain(res.status);
      const text = await res.text();
      expect(text).not.toContain("Secret");
    }
    // Signed out, every page goes to the sign-in page.
    for (const path of ["/app", "/app/keys", "/app/usage", "/app/albums", "/app/webhooks", "/app/upload"]) {
      const res = await request(path, { redirect: "manual" });
      expect(res.status, path).toBe(303);
      expect(res.headers.get("Location")).toBe("/app/sign-in");
    }
  });

  it("show each page of the account's own, and an upload's own page its forms", async () => {
    const s = await signedIn();
    const made = await newUpload(s.account, { title: "Page me" });
    for (const path of [
      "/app",
      "/app/upload",
      "/app/albums",
      "/app/keys",
      "/app/usage",
      "/app/webhooks",
      "/app/security",
    ]) {
      const res = await pageOf(s, path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("Content-Security-Policy")).toContain("connect-src 'self'");
      const text = await res.text();
      expect(text, path).toContain('<script src="/assets/dashboard.js" defer>');
      expect(text).toContain('aria-current="page"');
    }
    const own = await (await pageOf(s, `/app/uploads/${made.id}`)).text();
    expect(own).toContain(`data-api="PATCH /${made.id}"`);
    expect(own).toContain(`data-api="POST /${made.id}/replace"`);
    expect(own).toContain(`data-api="DELETE /${made.id}"`);
    const usage = await (await pageOf(s, "/app/usage")).text();
    expect(usage).toMatch(/<rect [^>]*height="[1-9]\d*"><title>\d{4}-\d\d-\d\d: 1 uploads/);
  });
});

describe("the pages' budget", () => {
  it("is the account's API budget: a page past it is a 429, and an API call of the key is refused too", async () => {
    const s = await signedIn();
    const app = clockedApp({ RATE_LIMITS: "on", RATE_LIMIT_PER_MINUTE: "2" });
    const headers = { Cookie: s.b.cookie! };
    expect((await app.call("/app?q=a", { ip: s.b.ip, headers })).status).toBe(200);
    expect((await app.call("/app/usage", { ip: s.b.ip, headers })).status).toBe(200);
    const third = await app.call("/app?q=b", { ip: s.b.ip, headers });
    expect(third.status).toBe(429);
    expect(third.headers.get("Retry-After")).toMatch(/^\d+$/);
    expect((await app.call("/api/usage", { key: s.account.full, ip: s.b.ip })).status).toBe(429);
    app.clock.now += 61_000;
    expect((await app.call("/app", { ip: s.b.ip, headers })).status).toBe(200);
  });
});

describe("the webhooks pages", () => {
  it("make an endpoint through /app/api, show its secret's answer once, list it and its page", async () => {
    const s = await signedIn();
    const made = await json(
      appApi(s, "/webhooks", { method: "POST", json: { url: hookUrl("dashboard"), description: "Mine" } }),
    );
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    expect(made.body.data.secret).toMatch(/^whsec_/);
    const list = await (await pageOf(s, "/app/webhooks")).text();
    expect(list).toContain(`/app/webhooks/${made.body.data.id}`);
    expect(list).not.toContain(made.body.data.secret);
    const one = await pageOf(s, `/app/webhooks/${made.body.data.id}`);
    expect(one.status).toBe(200);
    const text = await one.text();
    expect(text).toContain(`data-api="POST /webhooks/${made.body.data.id}/test"`);
    expect(text).toContain(`data-api="POST /webhooks/${made.body.data.id}/rotate"`);
    expect(text).not.toContain(made.body.data.secret);
  });
});

describe("the grid's search", () => {
  it("reads a bounded window of the list, and says where to go on", async () => {
    const account = await newAccount();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await newUpload(account, { title: i === 0 ? "needle" : `hay ${i}` })).id);
      await nextMillisecond();
    }
    const db = database(env.DB);
    // A window of 2 from the newest: no match, but the list goes on past it.
    const first = await searchUploads(db, account.id, Date.now(), { title: "needle" }, { offset: 0 }, 2, 10);
    expect(first.rows).toEqual([]);
    expect(first.windowEnd?.[1]).toBe(ids[3]);
    const rest = await searchUploads(
      db,
      account.id,
      Date.now(),
      { title: "needle" },
      { after: first.windowEnd! },
      10,
      10,
    );
    expect(rest.rows.map((r) => r.id)).toEqual([ids[0]]);
    expect(rest.windowEnd).toBeNull();
  });
});
