import { Hono } from "hono";
import { html } from "hono/html";
import { registrationOptions } from "../../accounts/passkey-ceremonies";
import { registerThroughLink } from "../../accounts/sessions";
import { usableLink } from "../../accounts/sign-in-links";
import type { AppEnv } from "../../env";
import { ApiError } from "../../errors";
import { smallBody } from "../../http/body";
import { relyingParty, sameOriginOnly, setSessionCookie } from "../../http/signed-in";
import { drawCeremony } from "../../http/throttles/budgets";
import { readNames, readRegistration } from "./ceremony-fields";
import { dashboardPage } from "./layout";

/**
 * /app/join/{token}: a single-use link's page, where a person makes the passkey it registers
 * (an invite makes their account then) and is signed in with it.
 */
export const joinRoutes = new Hono<AppEnv>()
  .get("/app/join/:token", async (c) => {
    const token = c.req.param("token");
    let link: Awaited<ReturnType<typeof usableLink>>;
    try {
      link = await usableLink(c.var.db, token, c.var.now());
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const body = html`<h1>This link cannot be used</h1><p>${error.message}</p>
<p>Ask for a new one, or <a href="/app/sign-in">sign in</a> with a passkey you have.</p>`;
      return dashboardPage(c, { title: "Link not usable", body, status: error.status === 410 ? 410 : 404 });
    }
    const invite = link.kind === "invite";
    const what = invite
      ? "This invite makes your account, signed in with a passkey: no password."
      : "This link adds a passkey to your account and signs you in with it.";
    const accountField = html`<label for="account_name">Account name</label>
<input type="text" id="account_name" name="account_name" required maxlength="100" value="${link.name ?? ""}">`;
    const body = html`<h1>${invite ? "Create your account" : "Add a passkey"}</h1>
<p>${what} It works once, until ${new Date(link.expiresAt).toUTCString()}.</p>
<form>
${invite ? accountField : ""}
<label for="passkey_name">Name for this passkey</label>
<input type="text" id="passkey_name" name="passkey_name" required maxlength="100" value="This device">
<p><button type="submit" data-passkey="register" data-endpoint="/app/join/${token}">Create passkey</button></p>
</form>
<p data-passkey-status role="alert"></p>`;
    return dashboardPage(c, { title: invite ? "Create your account" : "Add a passkey", body, passkeys: true });
  })
  .post("/app/join/:token/options", sameOriginOnly, smallBody, async (c) => {
    await readNames(c);
    await drawCeremony(c);
    const link = await usableLink(c.var.db, c.req.param("token"), c.var.now());
    const options = await registrationOptions(c.var.db, relyingParty(c), { link }, c.var.now());
    return c.json({ type: "success" as const, data: options });
  })
  .post("/app/join/:token", sameOriginOnly, smallBody, async (c) => {
    const fields = await readRegistration(c);
    const now = c.var.now();
    const link = await usableLink(c.var.db, c.req.param("token"), now);
    const answer = {
      response: fields.response,
      passkeyName: fields.passkey_name,
      accountName: fields.account_name ?? null,
    };
    const userAgent = c.req.header("User-Agent") ?? null;
    const session = await registerThroughLink(c.var.db, relyingParty(c), { link }, answer, userAgent, now);
    setSessionCookie(c, session.token, session.expiresAt);
    return c.json({ type: "success" as const, data: { next: "/app" } });
  });
