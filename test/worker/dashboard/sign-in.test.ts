import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sweepSignIns } from "../../../src/accounts/sign-in-sweep";
import { base64Url } from "../../../src/bytes";
import { database } from "../../../src/storage/db";
import { json, newAccount, request } from "../helpers";
import { browser, csrfOf, invite, join, newIp, page, post, signIn } from "./browser-session";

/**
 * The dashboard's sign-in (passkeys only): invites and the account's own links register a passkey
 * and sign in; sessions are cookies that end at sign-out or revocation; every state-changing
 * request needs the service's Origin and the session's CSRF token. A software authenticator
 * answers the ceremonies here; test/node/dashboard.test.ts runs them in Chromium.
 */

describe("invites", () => {
  it("make an account with its passkey, signed in, with the invite's name and quotas; once", async () => {
    const path = await invite({ name: "Ada", quota_uploads: 7 });
    const b = browser();
    const joinPage = await page(b, path);
    expect(joinPage.status).toBe(200);
    expect(joinPage.headers.get("Content-Security-Policy")).toContain("connect-src 'self'");
    expect(await joinPage.text()).toContain('value="Ada"');

    const joined = await join(b, path, { passkey_name: "Laptop", account_name: "Ada Lovelace" } as never);
    expect(joined.status, JSON.stringify(joined.body)).toBe(200);
    expect(joined.body.data.next).toBe("/app");
    const setCookie = joined.headers.get("Set-Cookie")!;
    expect(setCookie).toMatch(/^__Host-session=sess_[0-9A-Za-z]{32};/);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/Secure/);
    expect(setCookie).toMatch(/SameSite=Lax/);

    const home = await page(b, "/app");
    expect(home.status).toBe(200);
    expect(await home.text()).toContain("Ada Lovelace");
    const accountId = (await env.DB.prepare("SELECT account_id FROM passkeys ORDER BY created_at DESC LIMIT 1").first<{
      account_id: string;
    }>())!.account_id;
    const quotas = await json(request(`/admin/accounts/${accountId}`, { admin: true }));
    expect(quotas.body.data.quota_uploads).toBe(7);

    // Used: its page and its ceremony are refused, in words, with 410.
    expect((await page(browser(), path)).status).toBe(410);
    const again = browser();
    expect((await post(again, `${path}/options`, { passkey_name: "x" })).status).toBe(410);
  });

  it("are single-use even when two browsers race through one", async () => {
    const path = await invite();
    const [a, b] = [browser(), browser()];
    const names = { passkey_name: "Phone", account_name: "Racer" };
    const [oa, ob] = await Promise.all([post(a, `${path}/options`, names), post(b, `${path}/options`, names)]);
    const [ra, rb] = await Promise.all([
      a.authenticator.register(oa.body.data),
      b.authenticator.register(ob.body.data),
    ]);
    const answers = await Promise.all([
      post(a, path, { ...names, response: ra }),
      post(b, path, { ...names, response: rb }),
    ]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 410]);
    const made = await env.DB.prepare("SELECT COUNT(*) AS n FROM accounts WHERE name = 'Racer'").first<{ n: number }>();
    expect(made!.n).toBe(1);
  });

  it("expire, and are the operator's alone", async () => {
    const expired = await invite({ expires_in_hours: 1 });
    const token = expired.split("/").pop()!;
    const hash = [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)))]
      .map((b) => b.toString(16).padStart(2, "0"))
      .join("");
    await env.DB.prepare("UPDATE sign_in_links SET expires_at = 0 WHERE token_hash = ?").bind(hash).run();
    expect((await page(browser(), expired)).status).toBe(410);
    expect((await page(browser(), "/app/join/sil_nosuchtoken0000000000000000000000")).status).toBe(404);
    const refused = await request("/admin/invites", { method: "POST", json: {} });
    expect(refused.status).toBe(401);
    const bad = await json(request("/admin/invites", { method: "POST", admin: true, json: { expires_in_hours: 0 } }));
    expect(bad.status).toBe(422);
  });
});

describe("an account's own link", () => {
  it("is made with the full key only, and adds a passkey to that account", async () => {
    const account = await newAccount("own-link");
    expect((await request("/api/sign-in-links", { method: "POST", key: account.upload })).status).toBe(401);
    expect((await request("/api/sign-in-links", { method: "POST" })).status).toBe(401);
    expect((await request("/api/sign-in-links", { key: account.full })).status).toBe(405);
    const made = await json(request("/api/sign-in-links", { method: "POST", key: account.full }));
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ type: "success", msg: "success" });
    const b = browser();
    expect((await join(b, new URL(made.body.data.url).pathname)).status).toBe(200);
    const passkey = await env.DB.prepare("SELECT account_id FROM passkeys WHERE account_id = ?")
      .bind(account.id)
      .first();
    expect(passkey).not.toBeNull();
  });

  it("refuses an answer made for another link's challenge", async () => {
    const account = await newAccount("own-link");
    const [one, two] = await Promise.all(
      [1, 2].map(
        async () =>
          new URL((await json(request("/api/sign-in-links", { method: "POST", key: account.full }))).body.data.url)
            .pathname,
      ),
    );
    const b = browser();
    const options = await post(b, `${one}/options`, { passkey_name: "x" });
    const answer = await b.authenticator.register(options.body.data);
    expect((await post(b, two!, { passkey_name: "x", response: answer })).status).toBe(422);
  });
});

describe("sessions", () => {
  async function signedUp() {
    const b = browser();
    expect((await join(b, await invite({ name: "Sessions" }))).status).toBe(200);
    return b;
  }

  it("sign in with the passkey again, a new cookie each time; sign-out ends the session for every copy", async () => {
    const b = await signedUp();
    const first = b.cookie!;
    const stolen = { ...b };
    const signedIn = await signIn(b);
    expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200);
    expect(b.cookie).not.toBe(first);
    expect((await page(b, "/app")).status).toBe(200);

    const csrf = await csrfOf(b);
    const signedOut = b.cookie!;
    const out = await post(b, "/app/sign-out", undefined, { "X-CSRF-Token": csrf });
    expect(out.status).toBe(303);
    expect(out.headers.get("Set-Cookie")).toMatch(/__Host-session=;/);
    const afterwards = await page({ ...stolen, cookie: b.cookie }, "/app");
    expect(afterwards.status).toBe(303);
    expect(afterwards.headers.get("Location")).toBe("/app/sign-in");
    // The first session (the invite's) is still its own until ended.
    expect((await page(stolen, "/app")).status).toBe(200);

    // Signing out again, with the ended session's cookie (a second tab's button): there is
    // nothing left to end, so no token is asked for, and the browser lands on the sign-in page.
    const again = await post({ ...b, cookie: signedOut }, "/app/sign-out", undefined);
    expect(again.status).toBe(303);
    expect(again.headers.get("Location")).toBe("/app/sign-in");
    expect(again.headers.get("Set-Cookie")).toMatch(/__Host-session=;/);
    // A live session still needs its token to be ended, and only from the service's own pages.
    expect((await post(stolen, "/app/sign-out", undefined)).status).toBe(403);
    expect((await post(stolen, "/app/sign-out", undefined, { Origin: "https://elsewhere.example" })).status).toBe(403);
    expect((await page(stolen, "/app")).status).toBe(200);
  });

  it("can be ended one by one or all others, at once", async () => {
    const a = await signedUp();
    const other = { ...a, ip: newIp() };
    expect((await signIn(other)).status).toBe(200);
    const csrf = await csrfOf(a);
    const list = await (await page(a, "/app/security")).text();
    const ids = [...list.matchAll(/\/app\/sessions\/([0-9A-Za-z]+)\/end/g)].map((m) => m[1]);
    expect(ids).toHaveLength(1);
    expect((await post(a, `/app/sessions/${ids[0]}/end`, undefined, { "X-CSRF-Token": csrf })).status).toBe(303);
    expect((await page(other, "/app")).status).toBe(303);
    expect((await page(a, "/app")).status).toBe(200);
  });

  it("refuse a state-changing request without the CSRF token, or from another origin", async () => {
    const a = await signedUp();
    const csrf = await csrfOf(a);
    expect((await post(a, "/app/sessions/end-others", undefined)).status).toBe(403);
    expect((await post(a, "/app/sessions/end-others", undefined, { "X-CSRF-Token": "x".repeat(32) })).status).toBe(403);
    const foreign = await post(a, "/app/sessions/end-others", undefined, {
      "X-CSRF-Token": csrf,
      Origin: "https://evil.example",
    });
    expect(foreign.status).toBe(403);
    expect((await post(browser(), "/app/sign-in/options", {}, { Origin: "https://evil.example" })).status).toBe(403);
    expect((await post(a, "/app/sessions/end-others", undefined, { "X-CSRF-Token": csrf })).status).toBe(303);
  });
});

describe("passkeys", () => {
  it("a second is added and the first removed; the last is kept; another account's are not found", async () => {
    const a = browser();
    expect((await join(a, await invite({ name: "Keys" }))).status).toBe(200);
    const csrf = await csrfOf(a);
    const options = await post(a, "/app/passkeys/options", { passkey_name: "Phone" }, { "X-CSRF-Token": csrf });
    expect(options.status).toBe(200);
    const response = await a.authenticator.register(options.body.data);
    const added = await post(a, "/app/passkeys", { passkey_name: "Phone", response }, { "X-CSRF-Token": csrf });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    const [laptop, phone] = a.authenticator.credentials;
    const id = (c: typeof laptop) => base64Url(String.fromCharCode(...c!.id));

    const intruder = browser();
    expect((await join(intruder, await invite({ name: "Intruder" }))).status).toBe(200);
    const theirs = await post(intruder, `/app/passkeys/${id(laptop)}/remove`, undefined, {
      "X-CSRF-Token": await csrfOf(intruder),
    });
    expect(theirs.status).toBe(404);

    expect((await post(a, `/app/passkeys/${id(laptop)}/remove`, undefined, { "X-CSRF-Token": csrf })).status).toBe(303);
    const last = await post(a, `/app/passkeys/${id(phone)}/remove`, undefined, { "X-CSRF-Token": csrf });
    expect(last.status).toBe(409);
    // The removed passkey signs in no more; the other does.
    const options2 = await post(a, "/app/sign-in/options", {});
    expect(
      (
        await post(a, "/app/sign-in", {
          response: await a.authenticator.signIn(options2.body.data, { credential: laptop }),
        })
      ).status,
    ).toBe(401);
    expect((await signIn(a)).status).toBe(200);
  });

  it("a sign-in answer is used once, and failed sign-ins from one network are throttled", async () => {
    const a = browser();
    expect((await join(a, await invite())).status).toBe(200);
    const options = await post(a, "/app/sign-in/options", {});
    const answer = await a.authenticator.signIn(options.body.data);
    expect((await post(a, "/app/sign-in", { response: answer })).status).toBe(200);
    expect((await post(a, "/app/sign-in", { response: answer })).status).toBe(401);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await post(a, "/app/sign-in", { response: answer })).status);
    expect(statuses.at(-1)).toBe(429);
    const malformed = await post(browser(), "/app/sign-in", { response: { id: "!" } });
    expect(malformed.status).toBe(422);
  });
});

describe("the cron job's sign-in sweep", () => {
  it("removes expired challenges, sessions and links, and nothing current", async () => {
    const b = browser();
    expect((await join(b, await invite({ name: "Swept" }))).status).toBe(200);
    const current = await invite();
    await post(browser(), "/app/sign-in/options", {});
    const now = Date.now();
    const ids = async () => ({
      challenges: (await env.DB.prepare("SELECT challenge FROM webauthn_challenges").all()).results.length,
      mine: await env.DB.prepare(
        "SELECT (SELECT COUNT(*) FROM sessions WHERE user_agent = 'swept') AS sessions, " +
          "(SELECT COUNT(*) FROM sign_in_links WHERE name = 'Swept') AS links",
      ).first<{ sessions: number; links: number }>(),
    });
    const expire = (sql: string) => env.DB.prepare(sql).run();
    await expire(
      "UPDATE sessions SET user_agent = 'swept', expires_at = 1 WHERE id = (SELECT id FROM sessions ORDER BY created_at DESC LIMIT 1)",
    );
    await expire("UPDATE sign_in_links SET expires_at = 1 WHERE name = 'Swept'");
    await expire("UPDATE webauthn_challenges SET expires_at = 1");
    const before = await ids();
    expect(before.mine).toEqual({ sessions: 1, links: 1 });
    expect(await sweepSignIns({ db: database(env.DB), now: () => now }, 500)).toBeGreaterThanOrEqual(3);
    const after = await ids();
    expect(after.mine).toEqual({ sessions: 0, links: 0 });
    expect(after.challenges).toBe(0);
    // The unused, unexpired invite is still there to be used.
    expect((await page(browser(), current)).status).toBe(200);
  });
});
