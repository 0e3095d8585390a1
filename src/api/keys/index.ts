import { regenerateKey } from "../../accounts/accounts";
import { parseOrThrow } from "../../errors";
import { identifyCaller, requireKey } from "../../http/auth";
import { readFields } from "../../http/body";
import { accountSession } from "../../http/d1-sessions";
import { methodNotAllowed } from "../../http/method-not-allowed";
import { routeGroup } from "../../http/route-group";
import { rateLimits } from "../../http/throttles/rate-limits";
import { envelope } from "../envelope";
import { describeKeyRotate } from "./openapi";
import { keyRotateBody, keyRotateResponseSchema } from "./schemas";

/**
 * POST /api/keys/rotate (extension): the full key replaces either of the account's keys, as the
 * operator's POST /admin/accounts/{id}/keys does, on the API's limits and D1 session.
 */
export const keyRoutes = routeGroup(identifyCaller, rateLimits("api"), accountSession)
  .post("/keys/rotate", describeKeyRotate, requireKey("full"), async (c) => {
    const { kind } = parseOrThrow(keyRotateBody, await readFields(c.req.raw));
    const { key } = await regenerateKey(c.var.db, c.var.caller.accountId, kind, c.var.now());
    return envelope(c, keyRotateResponseSchema, { msg: "success", data: { kind, key } });
  })
  .all("/keys/rotate", methodNotAllowed("POST"));
