import { Hono } from "hono";
import { html } from "hono/html";
import PASSKEYS_SCRIPT from "../browser/passkeys.js";
import type { AppEnv } from "../../env";
import { requireSignIn } from "../../http/signed-in";
import { accountName } from "../../accounts/accounts";
import { script } from "../pages";
import { joinRoutes } from "./join";
import { dashboardPage, WEBAUTHN_PATH, WEBAUTHN_SCRIPT } from "./layout";
import { securityRoutes } from "./security";
import { signInRoutes } from "./sign-in";

/**
 * The signed-in dashboard at /app: passkeys only (sign-in.ts, join.ts), then the account's own
 * pages, each acting with the full key's rights through the same domain functions as the API.
 */
export const dashboard = new Hono<AppEnv>()
  .get("/assets/passkeys.js", (c) => script(c, PASSKEYS_SCRIPT))
  .get(WEBAUTHN_PATH, (c) => script(c, WEBAUTHN_SCRIPT))
  .route("/", signInRoutes)
  .route("/", joinRoutes)
  .route("/", securityRoutes)
  .use("/app", requireSignIn("page"))
  .get("/app", async (c) => {
    const name = await accountName(c.var.db, c.var.caller.accountId);
    const body = html`<h1>${name}</h1>
<p>Signed in. <a href="/upload">Upload files</a>, or manage
<a href="/app/security">your passkeys and sessions</a>.</p>`;
    return dashboardPage(c, { title: name, body, csrfToken: c.var.signIn.csrfToken });
  });
