import type { Context } from "hono";
import { readSigningSecret, rotateSigningSecret } from "../../accounts/signing-secret";
import type { AppEnv } from "../../env";
import { identifyCaller, requireKey } from "../../http/auth";
import { accountSession } from "../../http/d1-sessions";
import { methodNotAllowed } from "../../http/method-not-allowed";
import { routeGroup } from "../../http/route-group";
import { rateLimits } from "../../http/throttles/rate-limits";
import { envelope } from "../envelope";
import { describeSigningSecretGet, describeSigningSecretRotate } from "./openapi";
import { signingSecretResponseSchema } from "./schemas";

/**
 * The account's signing secret for transform URLs (extension): read (made on the first read) and
 * rotated with the full key, on the API's limits and D1 session as the other account routes are.
 */

const answer = (c: Context<AppEnv>, data: Awaited<ReturnType<typeof readSigningSecret>>) =>
  envelope(c, signingSecretResponseSchema, { msg: "success", data });

export const signingSecretRoutes = routeGroup(identifyCaller, rateLimits("api"), accountSession)
  .get("/signing-secret", describeSigningSecretGet, requireKey("full"), async (c) =>
    answer(c, await readSigningSecret(c.var.db, c.var.caller.accountId, c.var.now())),
  )
  .all("/signing-secret", methodNotAllowed("GET"))
  .post("/signing-secret/rotate", describeSigningSecretRotate, requireKey("full"), async (c) =>
    answer(c, await rotateSigningSecret(c.var.db, c.var.caller.accountId, c.var.now())),
  )
  .all("/signing-secret/rotate", methodNotAllowed("POST"));
