import chromium from "@sparticuz/chromium";
import puppeteer, { type Browser, type CDPSession, type Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, sharedTestServer, type TestServer } from "./server";

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

const launch = async () =>
  puppeteer.launch({ executablePath: await chromium.executablePath(), args: chromium.args, headless: true });

beforeAll(async () => {
  server = await sharedTestServer();
  origin = server.url.replace("127.0.0.1", "localhost");
  [browser, otherBrowser] = await Promise.all([launch(), launch()]);
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
    expect(await page.$eval("h1", (h) => h.textContent)).toBe("Grace Hopper");

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
