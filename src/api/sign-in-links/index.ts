import { makePasskeyLink } from "../../accounts/sign-in-links";
import { identifyCaller, requireKey } from "../../http/auth";
import { accountSession } from "../../http/d1-sessions";
import { methodNotAllowed } from "../../http/method-not-allowed";
import { publicOrigin } from "../../http/request-info";
import { routeGroup } from "../../http/route-group";
import { rateLimits } from "../../http/throttles/rate-limits";
import { isoTimestamp } from "../../time";
import { envelope } from "../envelope";
import { describeSignInLinkCreate } from "./openapi";
import { signInLinkResponseSchema } from "./schemas";

/** POST /api/sign-in-links (extension): the full key makes a link for a passkey of its account. */
export const signInLinkRoutes = routeGroup(identifyCaller, rateLimits("api"), accountSession)
  .post("/sign-in-links", describeSignInLinkCreate, requireKey("full"), async (c) => {
    const link = await makePasskeyLink(c.var.db, c.var.caller.accountId, c.var.now());
    const data = { url: `${publicOrigin(c)}/app/join/${link.token}`, expires_at: isoTimestamp(link.expiresAt) };
    return envelope(c, signInLinkResponseSchema, { msg: "success", data }, 201);
  })
  .all("/sign-in-links", methodNotAllowed("POST"));
