import type { Browser, CDPSession, Page } from "puppeteer-core";
import { launchChromium } from "./chromium";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRequire } from "node:module";
import { ADMIN_TOKEN, fixturePath, sharedTestServer, type TestServer } from "./server";

/**
 * The dashboard's passkeys in Chromium, through the DevTools protocol's virtual authenticators
 * (WebAuthn domain): an invite makes an account and its passkey; signing out and in again; a
 * second passkey added and the first removed; a session ended from another is refused at once;
 * a cookie kept after sign-out opens nothing. Passkeys need a host name, not an IP address, so
 * the browser opens the service as localhost.
 */

let server: TestServer;
let origin: string;
/** Two browsers: one signed in, and another that signs in beside it (Chromium as npm ships it runs one profile each). */
let browser: Browser;
let otherBrowser: Browser;

beforeAll(async () => {
  server = await sharedTestServer();
  origin = server.url.replace("127.0.0.1", "localhost");
  [browser, otherBrowser] = await Promise.all([launchChromium(), launchChromium()]);
});

afterAll(async () => {
  await Promise.all([browser?.close(), otherBrowser?.close()]);
});

async function invite(name: string) {
  const res = await fetch(`${server.url}/admin/invites`, {
    method: "POST",
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, "Content-Type": "application/json" },
    body: JSON.stringify({ name }),
  });
  expect(res.status).toBe(201);
  return `${origin}${new URL(((await res.json()) as { data: { url: string } }).data.url).pathname}`;
}

/**
 * A virtual authenticator that holds passkeys and says the user is present and verified: the
 * device's own, or a security key (Chromium takes one of the device's own per browser).
 */
async function authenticator(cdp: CDPSession, transport: "internal" | "usb" = "internal"): Promise<string> {
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport,
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return authenticatorId;
}

/** Clicks `selector` and waits for the page the service sends the browser to next. */
async function clickThrough(page: Page, selector: string) {
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click(selector)]);
}

async function signIn(page: Page) {
  await page.goto(`${origin}/app/sign-in`, { waitUntil: "load" });
  await clickThrough(page, "button[data-passkey=sign-in]");
  expect(new URL(page.url()).pathname).toBe("/app");
}

describe("the dashboard's passkeys, in Chromium", () => {
  it("invite, sign out and in, a second passkey for the first, and sessions ended at once", async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text());
    });
    const cdp = await page.createCDPSession();
    const first = await authenticator(cdp);

    // The invite: the account is made with its passkey, and signed in.
    await page.goto(await invite("Grace"), { waitUntil: "load" });
    await page.$eval("#account_name", (input) => {
      (input as unknown as { value: string }).value = "";
    });
    await page.type("#account_name", "Grace Hopper");
    await clickThrough(page, "button[data-passkey=register]");
    expect(new URL(page.url()).pathname).toBe("/app");
    expect(await page.content()).toContain("Signed in as Grace Hopper.");

    // Out, and in again with the passkey alone.
    await clickThrough(page, "header form button");
    expect(new URL(page.url()).pathname, await page.content()).toBe("/app/sign-in");
    await signIn(page);

    // A second passkey, on another authenticator; the first is then removed and no longer there.
    const second = await authenticator(cdp, "usb");
    await cdp.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId: first });
    await page.goto(`${origin}/app/security`, { waitUntil: "load" });
    await page.$eval("#passkey_name", (input) => {
      (input as unknown as { value: string }).value = "";
    });
    await page.type("#passkey_name", "Phone");
    await clickThrough(page, "button[data-passkey=register]");
    const names = () =>
      page.$$eval("table:first-of-type tbody tr td:first-child", (cells) => cells.map((c) => c.textContent));
    expect(await names()).toEqual(["This device", "Phone"]);
    await clickThrough(page, "form[action$='/remove'] button");
    expect(await names()).toEqual(["Phone"]);
    await clickThrough(page, "header form button");
    await signIn(page);

    // Another browser signed in with the same passkey; its session ended from the first one.
    const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId: second });
    const other = await otherBrowser.newPage();
    const otherCdp = await other.createCDPSession();
    const copy = await authenticator(otherCdp);
    await otherCdp.send("WebAuthn.addCredential", { authenticatorId: copy, credential: credentials[0]! });
    await signIn(other);
    await page.goto(`${origin}/app/security`, { waitUntil: "load" });
    await clickThrough(page, "form[action$='/end'] button");
    await other.goto(`${origin}/app`, { waitUntil: "load" });
    expect(new URL(other.url()).pathname).toBe("/app/sign-in");

    // A cookie kept after sign-out opens nothing.
    const cookie = (await browser.cookies()).find((c) => c.name === "__Host-session");
    expect(cookie).toMatchObject({ name: "__Host-session", httpOnly: true, secure: true, sameSite: "Lax" });
    await clickThrough(page, "header form button");
    const stolen = await fetch(`${server.url}/app`, {
      headers: { Cookie: `${cookie!.name}=${cookie!.value}` },
      redirect: "manual",
    });
    expect(stolen.status).toBe(303);
    expect(errors).toEqual([]);
    await Promise.all([other.close(), page.close()]);
  });
});

/** What the callbacks run in the page see (this project's types are the Workers', not the DOM's). */
declare const document: any, window: any, DataTransfer: any, DragEvent: any;

/** axe-core's browser build, run in the page (its CSP bypassed for it alone). */
const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js");

/** The serious and critical violations axe-core finds on the page, by rule and the elements it names. */
async function accessibilityProblems(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (c: unknown, o: unknown) => Promise<any> } }).axe;
    const result = await axe.run(document, { resultTypes: ["violations"] });
    return result.violations as { id: string; impact: string; nodes: { target: string[] }[] }[];
  });
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/** The answer of the API to the key. */
async function api(path: string, key: string, init: RequestInit = {}) {
  const res = await fetch(`${server.url}/api${path}`, { ...init, headers: { "X-API-Key": key, ...init.headers } });
  return { status: res.status, body: (await res.json()) as any };
}

/** Submits the form that holds `selector` and waits for the page it reloads or goes to. */
async function submitThrough(page: Page, selector: string) {
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click(selector)]);
}

/** Types `text` into the field, replacing what it held. */
async function retype(page: Page, selector: string, text: string) {
  await page.$eval(selector, (field) => {
    (field as unknown as { value: string }).value = "";
  });
  await page.type(selector, text);
}

describe("the dashboard's pages, in Chromium", () => {
  it("keys, upload, an upload changed, an album made and ordered by keyboard and by drag and drop: each seen through the API; no serious axe finding", async () => {
    const page = await browser.newPage();
    await page.setBypassCSP(true);
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    page.on("dialog", (dialog) => dialog.accept());
    const cdp = await page.createCDPSession();
    await authenticator(cdp);
    await page.goto(await invite("Ada"), { waitUntil: "load" });
    const problems: Record<string, string[]> = { join: await accessibilityProblems(page) };
    await clickThrough(page, "button[data-passkey=register]");

    // Keys: a new full key, shown once; it works, and so does the one made after it, the first no longer.
    await page.goto(`${origin}/app/keys`, { waitUntil: "load" });
    problems.keys = await accessibilityProblems(page);
    const newKey = async (kind: "full" | "upload") => {
      await page.$eval("#new-key-value", (field) => {
        (field as unknown as { value: string }).value = "";
      });
      await page.click(`form:has(input[name=kind][value=${kind}]) button[type=submit]`);
      await page.waitForFunction(() => document.getElementById("new-key-value").value !== "");
      return page.$eval("#new-key-value", (field) => (field as unknown as { value: string }).value);
    };
    const firstKey = await newKey("full");
    expect((await api("/usage", firstKey)).status).toBe(200);
    const key = await newKey("full");
    expect((await api("/usage", firstKey)).status).toBe(401);
    expect((await api("/usage", key)).status).toBe(200);
    expect(await page.$eval("a[data-config=shareX]", (a) => (a as unknown as { href: string }).href)).toMatch(/^blob:/);

    // The uploader, signed in: two files, no key typed.
    await page.goto(`${origin}/app/upload`, { waitUntil: "load" });
    problems.upload = await accessibilityProblems(page);
    await (await page.$("#files"))!.uploadFile(
      fixturePath("pngsuite/basn2c08.png"),
      fixturePath("pngsuite/basn0g08.png"),
    );
    await page.waitForFunction(() => document.querySelectorAll("#results li[data-id]").length === 2, {
      timeout: 60_000,
    });
    const listed = (await api("", key)).body.data as { id: string }[];
    expect(listed).toHaveLength(2);
    const [newer, older] = listed.map((u) => u.id) as [string, string];

    // The grid, and an upload's page: its title changed; a bad view limit said on the page, nothing stored.
    await page.goto(`${origin}/app`, { waitUntil: "load" });
    problems.grid = await accessibilityProblems(page);
    await clickThrough(page, `a[href="/app/uploads/${older}"]`);
    problems.uploadPage = await accessibilityProblems(page);
    await retype(page, "#title", "Chosen title");
    await submitThrough(page, "form[data-api^=PATCH]:has(#title) button[type=submit]");
    expect((await api(`/${older}`, key)).body.data.title).toBe("Chosen title");
    await retype(page, "#max_views", "0");
    await page.$eval("#max_views", (field) => field.removeAttribute("min"));
    await page.click("form:has(#max_views) button[type=submit]");
    await page.waitForFunction(() => document.querySelector("form:has(#max_views) [role=alert]")?.textContent !== "");
    expect(await page.$eval("form:has(#max_views) [role=alert]", (p: any) => p.textContent)).toContain("max_views");
    expect((await api(`/${older}`, key)).body.data).toMatchObject({ title: "Chosen title" });
    // Its focal point, picked by a click on the image; an expiry; then its file replaced.
    await page.click("img[data-focal-picker]", { offset: { x: 1, y: 1 } });
    expect(await page.$eval("#focal", (f) => (f as unknown as { value: string }).value)).toMatch(/^0\.\d{3},0\.\d{3}$/);
    await submitThrough(page, "form:has(#focal) button[type=submit]");
    expect((await api(`/${older}`, key)).body.data.focal).toMatchObject({
      x: expect.any(Number),
      y: expect.any(Number),
    });
    await page.select("#expires_in", "86400");
    await submitThrough(page, "form:has(#expires_in) button[type=submit]");
    expect((await api(`/${older}`, key)).body.data.expires_at).not.toBeNull();
    const before = (await api(`/${older}`, key)).body.data.size;
    await (await page.$("#replacement"))!.uploadFile(fixturePath("pngsuite/basn6a16.png"));
    await submitThrough(page, "form:has(#replacement) button[type=submit]");
    expect((await api(`/${older}`, key)).body.data.size).not.toBe(before);

    // An album: made, both uploads added, the first moved down by keyboard alone.
    await page.goto(`${origin}/app/albums`, { waitUntil: "load" });
    problems.albums = await accessibilityProblems(page);
    await page.type("#title", "Trip");
    await submitThrough(page, "form[data-api='POST /albums'] button[type=submit]");
    const albumId = new URL(page.url()).pathname.split("/").pop()!;
    await page.type("#add-uploads", `${newer} ${older}`);
    await submitThrough(page, "form:has(#add-uploads) button[type=submit]");
    problems.album = await accessibilityProblems(page);
    const order = async () =>
      ((await api(`/albums/${albumId}/uploads`, key)).body.data as { id: string }[]).map((u) => u.id);
    expect(await order()).toEqual([newer, older]);
    await page.focus(`ol[data-order] li[data-id="${newer}"]`);
    await page.keyboard.down("Alt");
    await page.keyboard.press("ArrowDown");
    await page.keyboard.up("Alt");
    await page.waitForFunction(() => document.getElementById("order-said")?.textContent === "Order saved.");
    expect(await order()).toEqual([older, newer]);
    // And back by drag and drop (the drag's events as the browser sends them): the upload now first
    // dragged past the middle of the one after it.
    await page.$eval("#order-said", (p: any) => {
      p.textContent = "";
    });
    await page.evaluate(
      (from: string, to: string) => {
        const source = document.querySelector(`ol[data-order] li[data-id="${from}"]`);
        const target = document.querySelector(`ol[data-order] li[data-id="${to}"]`);
        const box = target.getBoundingClientRect();
        const transfer = new DataTransfer();
        const at = { bubbles: true, cancelable: true, dataTransfer: transfer };
        source.dispatchEvent(new DragEvent("dragstart", at));
        target.dispatchEvent(new DragEvent("dragover", { ...at, clientX: box.right - 2, clientY: box.bottom - 2 }));
        target.dispatchEvent(new DragEvent("drop", at));
        source.dispatchEvent(new DragEvent("dragend", at));
      },
      older,
      newer,
    );
    await page.waitForFunction(() => document.getElementById("order-said")?.textContent === "Order saved.");
    expect(await order()).toEqual([newer, older]);
    await page.select("#cover", newer);
    await submitThrough(page, "form:has(#cover) button[type=submit]");
    expect((await api(`/albums/${albumId}`, key)).body.data.cover_id).toBe(newer);

    // A webhook endpoint the service may not send to: said on the page, none made.
    await page.goto(`${origin}/app/webhooks`, { waitUntil: "load" });
    await page.type("#url", "https://user:secret@example.com/hook");
    await page.click("form[data-api='POST /webhooks'] button[type=submit]");
    await page.waitForFunction(
      () => document.querySelector("form[data-api='POST /webhooks'] [role=alert]")?.textContent,
    );
    expect((await api("/webhooks", key)).body.data).toEqual([]);

    // The upload deleted from its page: gone from the API, and the page back at the grid.
    await page.goto(`${origin}/app/uploads/${newer}`, { waitUntil: "load" });
    await submitThrough(page, `form[data-api="DELETE /${newer}"] button[type=submit]`);
    expect(new URL(page.url()).pathname).toBe("/app");
    expect((await api(`/${newer}`, key)).status).toBe(404);

    for (const path of ["/app/usage", "/app/webhooks", "/app/security"]) {
      await page.goto(`${origin}${path}`, { waitUntil: "load" });
      problems[path] = await accessibilityProblems(page);
    }
    await clickThrough(page, "header form button");
    problems.signIn = await accessibilityProblems(page);
    expect(Object.fromEntries(Object.entries(problems).filter(([, found]) => found.length))).toEqual({});
    expect(errors).toEqual([]);
    await page.close();
  });
});
