import { expect } from "vitest";
import { SoftAuthenticator } from "../../support/soft-authenticator";
import { json, ORIGIN, request } from "../helpers";

/**
 * A browser of the dashboard's tests: its client network, its session cookie once signed in, and
 * a software authenticator that answers the passkey ceremonies as Chromium's virtual one does
 * (test/node/dashboard.test.ts).
 */

let nextIp = 1;
/** A client network of its own for each test, so that no test's throttled sign-ins touch another's. */
export const newIp = () => `198.51.100.${nextIp++}`;

export interface Browser {
  ip: string;
  cookie?: string;
  authenticator: SoftAuthenticator;
}

export const browser = (): Browser => ({ ip: newIp(), authenticator: new SoftAuthenticator(ORIGIN) });

export async function post(b: Browser, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await request(path, {
    method: "POST",
    redirect: "manual",
    ip: b.ip,
    headers: { Origin: ORIGIN, ...(b.cookie ? { Cookie: b.cookie } : {}), ...headers },
    json: body,
  });
  const cookie = res.headers.get("Set-Cookie");
  if (cookie?.startsWith("__Host-session=")) b.cookie = cookie.split(";")[0];
  const text = await res.text();
  return { status: res.status, body: text.startsWith("{") ? JSON.parse(text) : text, headers: res.headers };
}

export const page = (b: Browser, path: string) =>
  request(path, { ip: b.ip, headers: b.cookie ? { Cookie: b.cookie } : {}, redirect: "manual" });

export async function invite(body: Record<string, unknown> = {}) {
  const res = await json(request("/admin/invites", { method: "POST", admin: true, json: body }));
  expect(res.status).toBe(201);
  return new URL(res.body.data.url).pathname;
}

/** Registers a passkey through `path` (/app/join/{token}), as the join page's script does. */
export async function join(b: Browser, path: string, names = { passkey_name: "Laptop" }) {
  const options = await post(b, `${path}/options`, names);
  expect(options.status, JSON.stringify(options.body)).toBe(200);
  return post(b, path, { ...names, response: await b.authenticator.register(options.body.data) });
}

export async function signIn(b: Browser) {
  const options = await post(b, "/app/sign-in/options", {});
  expect(options.status).toBe(200);
  return post(b, "/app/sign-in", { response: await b.authenticator.signIn(options.body.data) });
}

/** The CSRF token the signed-in pages carry. */
export async function csrfOf(b: Browser) {
  const html = await (await page(b, "/app/security")).text();
  return /name="csrf-token" content="([^"]+)"/.exec(html)![1]!;
}
