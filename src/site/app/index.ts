import { Hono } from "hono";
import DASHBOARD_SCRIPT from "../browser/dashboard.js";
import PASSKEYS_SCRIPT from "../browser/passkeys.js";
import type { AppEnv } from "../../env";
import { script } from "../pages";
import { albumRoutes } from "./albums";
import { joinRoutes } from "./join";
import { keyRoutes } from "./keys";
import { WEBAUTHN_PATH, WEBAUTHN_SCRIPT } from "./layout";
import { securityRoutes } from "./security";
import { signInRoutes } from "./sign-in";
import { uploaderRoutes } from "./uploader";
import { uploadRoutes } from "./uploads";
import { usageRoutes } from "./usage";
import { webhookRoutes } from "./webhooks";

/**
 * The signed-in dashboard at /app: passkeys only (sign-in.ts, join.ts), then the account's own
 * pages. Their forms and scripts act through /app/api (the API's own routes, the session in place
 * of a key: src/entry/app.ts), so a change made here is checked as an API client's is; the pages
 * read through the same domain functions as the API, with the session's account.
 */
export const dashboard = new Hono<AppEnv>()
  .get("/assets/passkeys.js", (c) => script(c, PASSKEYS_SCRIPT))
  .get("/assets/dashboard.js", (c) => script(c, DASHBOARD_SCRIPT))
  .get(WEBAUTHN_PATH, (c) => script(c, WEBAUTHN_SCRIPT))
  .route("/", signInRoutes)
  .route("/", joinRoutes)
  .route("/", securityRoutes)
  .route("/", uploadRoutes)
  .route("/", uploaderRoutes)
  .route("/", albumRoutes)
  .route("/", keyRoutes)
  .route("/", usageRoutes)
  .route("/", webhookRoutes);
