import { Hono } from "hono";
import { html } from "hono/html";
import { addPasskey, passkeysOf, removePasskey } from "../../accounts/passkeys";
import { endOtherSessions, endSession, sessionsOf } from "../../accounts/sessions";
import { registrationOptions } from "../../accounts/passkey-ceremonies";
import type { AppEnv } from "../../env";
import { smallBody } from "../../http/body";
import { relyingParty, requireSignIn, sameOriginOnly } from "../../http/signed-in";
import { drawCeremony } from "../../http/throttles/budgets";
import { isoTimestamp } from "../../time";
import { readNames, readRegistration } from "./ceremony-fields";
import { csrfField, dashboardPage, signedInPage } from "./layout";

const when = (ms: number | null) => (ms === null ? "never" : isoTimestamp(ms).replace("T", " ").slice(0, 16));

/** /app/security: the account's passkeys and sessions, each to add or end. */
export const securityRoutes = new Hono<AppEnv>()
  .use("/app/security", ...signedInPage)
  .get("/app/security", async (c) => {
    const { accountId } = c.var.caller;
    const { csrfToken, id: current } = c.var.signIn;
    const [passkeys, sessions] = await Promise.all([
      passkeysOf(c.var.db, accountId),
      sessionsOf(c.var.db, accountId, c.var.now()),
    ]);
    const form = (action: string, label: string) =>
      html`<form method="post" action="${action}">${csrfField(csrfToken)}\
<button type="submit">${label}</button></form>`;
    const body = html`<h1>Sign-in and sessions</h1>
<h2>Passkeys</h2>
<table><thead><tr><th>Name</th><th>Added</th><th>Last used</th><th></th></tr></thead><tbody>
${passkeys.map(
  (p) => html`<tr><td>${p.name}</td><td>${when(p.createdAt)}</td><td>${when(p.lastUsedAt)}</td>
<td>${passkeys.length > 1 ? form(`/app/passkeys/${encodeURIComponent(p.id)}/remove`, `Remove ${p.name}`) : ""}\
</td></tr>`,
)}</tbody></table>
<form><label for="passkey_name">Name for a new passkey</label>
<input type="text" id="passkey_name" name="passkey_name" required maxlength="100" value="Another device">
<p><button type="submit" data-passkey="register" data-endpoint="/app/passkeys">Add a passkey</button></p></form>
<p data-passkey-status role="alert"></p>
<h2>Sessions</h2>
<table><thead><tr><th>Browser</th><th>Signed in</th><th>Last seen</th><th></th></tr></thead><tbody>
${sessions.map(
  (s) => html`<tr><td>${s.userAgent ?? "unknown"}${s.id === current ? " (this one)" : ""}</td>
<td>${when(s.createdAt)}</td><td>${when(s.lastSeenAt)}</td>
<td>${s.id === current ? "" : form(`/app/sessions/${s.id}/end`, "End")}</td></tr>`,
)}</tbody></table>
${sessions.length > 1 ? form("/app/sessions/end-others", "End every other session") : ""}`;
    return dashboardPage(c, {
      title: "Sign-in and sessions",
      body,
      csrfToken,
      passkeys: true,
      current: "/app/security",
    });
  })
  .use("/app/passkeys/*", sameOriginOnly, smallBody, requireSignIn("json"))
  .use("/app/passkeys", sameOriginOnly, smallBody, requireSignIn("json"))
  .use("/app/sessions/*", sameOriginOnly, smallBody, requireSignIn("json"))
  .post("/app/passkeys/options", async (c) => {
    await readNames(c);
    await drawCeremony(c);
    const registrant = { accountId: c.var.caller.accountId };
    const options = await registrationOptions(c.var.db, relyingParty(c), registrant, c.var.now());
    return c.json({ type: "success" as const, data: options });
  })
  .post("/app/passkeys", async (c) => {
    const fields = await readRegistration(c);
    const answer = { response: fields.response, passkeyName: fields.passkey_name };
    await addPasskey(c.var.db, relyingParty(c), c.var.caller.accountId, answer, c.var.now());
    return c.json({ type: "success" as const, data: { next: "/app/security" } });
  })
  .post("/app/passkeys/:id/remove", async (c) => {
    await removePasskey(c.var.db, c.var.caller.accountId, c.req.param("id"));
    return c.redirect("/app/security", 303);
  })
  .post("/app/sessions/end-others", async (c) => {
    await endOtherSessions(c.var.db, c.var.caller.accountId, c.var.signIn);
    return c.redirect("/app/security", 303);
  })
  .post("/app/sessions/:id/end", async (c) => {
    await endSession(c.var.db, c.var.caller.accountId, c.req.param("id"));
    return c.redirect("/app/security", 303);
  });
