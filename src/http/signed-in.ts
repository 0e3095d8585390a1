import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { createMiddleware } from "hono/factory";
import { signedIn } from "../accounts/sessions";
import type { RelyingParty } from "../accounts/passkey-ceremonies";
import { secretsEqual } from "../crypto";
import type { AppEnv } from "../env";
import { ApiError, forbidden } from "../errors";
import { clientIp, publicOrigin } from "./request-info";

/*
 * The dashboard's sign-in on HTTP: the session cookie, and what every state-changing request of
 * a signed-in browser must show besides it (the service's own Origin and the session's CSRF token).
 */

/**
 * `__Host-`: the browser keeps it only if it came Secure, from this host, for every path, so no
 * subdomain or plain-HTTP page can set or shadow it. Browsers treat localhost as secure, so
 * `npm run dev` signs in as production does.
 */
export const SESSION_COOKIE = "__Host-session";

export function setSessionCookie(c: Context<AppEnv>, token: string, expiresAt: number): void {
  setCookie(c, SESSION_COOKIE, token, {
    httpOnly: true,
    secure: true,
    sameSite: "Lax",
    path: "/",
    expires: new Date(expiresAt),
  });
}

export function clearSessionCookie(c: Context<AppEnv>): void {
  deleteCookie(c, SESSION_COOKIE, { path: "/", secure: true });
}

export const sessionToken = (c: Context<AppEnv>) => getCookie(c, SESSION_COOKIE) ?? "";

/** The relying party passkeys are made for: the service's public origin and its host. */
export function relyingParty(c: Context<AppEnv>): RelyingParty {
  const origin = publicOrigin(c);
  return { origin, id: new URL(origin).hostname, name: "Image host" };
}

const SAFE = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * A state-changing request must come from the service's own pages: its Origin is the service's
 * (browsers send one with every POST), or, where the browser sent none or "null" (a form posted
 * from a page whose referrer policy hides it), Sec-Fetch-Site says same-origin (a header no page
 * can set). Anything else is a 403 before any cookie is looked at.
 */
export const sameOriginOnly = createMiddleware<AppEnv>(async (c, next) => {
  if (!SAFE.has(c.req.method)) {
    const origin = c.req.header("Origin");
    const fetchSite = c.req.header("Sec-Fetch-Site");
    const same = origin && origin !== "null" ? origin === publicOrigin(c) : fetchSite === "same-origin";
    if (!same) throw forbidden("This request did not come from this service's pages.");
  }
  await next();
});

/**
 * The request's current session, if any, with its CSRF token checked where the request changes
 * state: in the `X-CSRF-Token` header (the pages' scripts) or the form's `csrf` field.
 */
async function currentSession(c: Context<AppEnv>) {
  const found = await signedIn(c.var.db, sessionToken(c), clientIp(c), c.var.now());
  if (found && !SAFE.has(c.req.method) && !(await csrfTokenMatches(c, found.session.csrfToken)))
    throw forbidden("This form is out of date: reload the page and try again.");
  return found;
}

/**
 * The signed-in account, as a full-key caller (c.var.caller) with its session (c.var.signIn); a
 * browser with no current session goes to the sign-in page (a page) or gets a 401 (anything
 * else). A state-changing request must carry the session's CSRF token too (currentSession).
 */
export const requireSignIn = (answer: "page" | "json") =>
  createMiddleware<AppEnv>(async (c, next) => {
    const found = await currentSession(c);
    if (!found) {
      if (answer === "page" && SAFE.has(c.req.method)) return c.redirect("/app/sign-in", 303);
      throw new ApiError(401, "Not signed in, or the session has ended.");
    }
    c.set("caller", found.caller);
    c.set("signIn", found.session);
    await next();
  });

/**
 * Sign-out's: the session, when there still is one, as requireSignIn sets it; none (it ended,
 * was revoked, or expired) lets the request through unsigned, since there is nothing left to end.
 */
export const signInIfAny = createMiddleware<AppEnv>(async (c, next) => {
  const found = await currentSession(c);
  if (found) {
    c.set("caller", found.caller);
    c.set("signIn", found.session);
  }
  await next();
});

async function csrfTokenMatches(c: Context<AppEnv>, expected: string): Promise<boolean> {
  let given = c.req.header("X-CSRF-Token");
  if (given === undefined && /^application\/x-www-form-urlencoded\b/i.test(c.req.header("Content-Type") ?? "")) {
    const form = await c.req.parseBody();
    given = typeof form.csrf === "string" ? form.csrf : undefined;
  }
  return given !== undefined && secretsEqual(given, expected);
}
