import { Hono } from "hono";
import { html } from "hono/html";
import { signInOptions, verifySignIn } from "../../accounts/passkey-ceremonies";
import { endOwnSession, signedIn, startSession } from "../../accounts/sessions";
import type { AppEnv } from "../../env";
import { ApiError, unauthorized } from "../../errors";
import { smallBody } from "../../http/body";
import { clientIp } from "../../http/request-info";
import {
  clearSessionCookie,
  relyingParty,
  sameOriginOnly,
  sessionToken,
  setSessionCookie,
  signInIfAny,
} from "../../http/signed-in";
import { drawCeremony } from "../../http/throttles/budgets";
import { throttledSignIn } from "../../http/throttles/guesses";
import { readAuthentication } from "./ceremony-fields";
import { dashboardPage } from "./layout";

/** Signing in with a passkey, and out. */
export const signInRoutes = new Hono<AppEnv>()
  .get("/app/sign-in", async (c) => {
    if (await signedIn(c.var.db, sessionToken(c), clientIp(c), c.var.now())) return c.redirect("/app", 303);
    const body = html`<h1>Sign in</h1>
<p>Sign in with a passkey of your account. An account gets its first passkey through an invite,
or through a link it makes with its full API key (<code>POST /api/sign-in-links</code>).</p>
<button type="button" data-passkey="sign-in" data-endpoint="/app/sign-in">Sign in with a passkey</button>
<p data-passkey-status role="alert"></p>`;
    return dashboardPage(c, { title: "Sign in", body, passkeys: true });
  })
  .post("/app/sign-in/options", sameOriginOnly, smallBody, async (c) => {
    await drawCeremony(c);
    return c.json({ type: "success" as const, data: await signInOptions(c.var.db, relyingParty(c), c.var.now()) });
  })
  .post("/app/sign-in", sameOriginOnly, smallBody, async (c) => {
    const response = await readAuthentication(c);
    const now = c.var.now();
    const attempt = await throttledSignIn(c, () => verifySignIn(c.var.db, relyingParty(c), response, now));
    if (attempt.outcome === "wait") {
      const seconds = String(attempt.retryAfterSeconds);
      throw new ApiError(429, `Too many failed sign-ins from your network. Retry in ${seconds} s.`, {
        "Retry-After": seconds,
      });
    }
    if (attempt.outcome === "wrong")
      throw unauthorized("That passkey is not one of this service's, or the sign-in took too long. Try again.");
    const passkey = attempt.value;
    const session = await startSession(
      c.var.db,
      passkey.accountId,
      passkey.id,
      c.req.header("User-Agent") ?? null,
      now,
    );
    setSessionCookie(c, session.token, session.expiresAt);
    return c.json({ type: "success" as const, data: { next: "/app" } });
  })
  // Signed out already (the session ended elsewhere, or expired): the cookie goes all the same, and
  // the browser lands where a sign-out leads, rather than on a 401.
  .post("/app/sign-out", sameOriginOnly, smallBody, signInIfAny, async (c) => {
    if (c.var.signIn) await endOwnSession(c.var.db, c.var.signIn);
    clearSessionCookie(c);
    return c.redirect("/app/sign-in", 303);
  });
