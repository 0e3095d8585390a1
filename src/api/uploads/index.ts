import type { Context } from "hono";
import { readUsageAnswer } from "../../accounts/quotas";
import { requestStores } from "../../deps";
import type { AppEnv } from "../../env";
import { parseOrThrow } from "../../errors";
import { identifyCaller, requireKey } from "../../http/auth";
import { readFields } from "../../http/body";
import { accountSession } from "../../http/d1-sessions";
import { methodNotAllowed } from "../../http/method-not-allowed";
import { linkSigning, publicOrigin } from "../../http/request-info";
import { routeGroup } from "../../http/route-group";
import { rateLimits } from "../../http/throttles/rate-limits";
import { validate } from "../../http/validation";
import { settingsOf } from "../../settings";
import { changeUpload } from "../../uploads/change";
import { presentUpload } from "../../uploads/present";
import { listPage, readOwnedUpload } from "../../uploads/read";
import { removeOwnedUpload } from "../../uploads/remove";
import { DELETED } from "../../uploads/schemas/resources";
import { assertExpiryAllowed, changeBody } from "../../uploads/schemas/requests";
import { envelope } from "../envelope";
import { listQuery, listResponseSchema, pageAsked, uploadItemResponseSchema } from "../schemas";
import { OTHER_ID_BEFORE_REPLACE, OTHER_ID_PARAM, UPLOAD_ID_PARAM } from "./id-paths";
import {
  describeChange,
  describeDelete,
  describeGet,
  describeList,
  describeReplace,
  describeUpload,
  describeUsage,
} from "./openapi";
import { plainTextUrl } from "./plain-text";
import { usageResponseSchema } from "./schemas";
import { handleReplace, handleUpload } from "./upload";

const deps = requestStores;

/** One upload's operations, the same for a well-formed id and for one no upload can have. */
type OneUpload = Context<AppEnv, "/:id">;
const getOne = async (c: OneUpload) => {
  const row = await readOwnedUpload(deps(c), c.var.caller.accountId, c.req.param("id"));
  const data = await presentUpload(row, publicOrigin(c), linkSigning(c));
  return envelope(c, uploadItemResponseSchema, { msg: "success", data });
};
const changeOne = async (c: OneUpload) => {
  const patch = parseOrThrow(changeBody, await readFields(c.req.raw));
  assertExpiryAllowed(patch.expires_in, settingsOf(c.env).expiresInMax);
  const row = await changeUpload(deps(c), c.var.caller.accountId, c.req.param("id"), patch);
  const data = await presentUpload(row, publicOrigin(c), linkSigning(c));
  return envelope(c, uploadItemResponseSchema, { msg: "success", data });
};
// The delete link answers the same (src/site/pages.ts).
const removeOne = async (c: OneUpload) => {
  await removeOwnedUpload(deps(c), c.var.caller.accountId, c.req.param("id"));
  return c.json(DELETED);
};
const replaceOne = (c: OneUpload) => handleReplace(c, deps(c));

/**
 * The uploads' operations (/api, /api/usage, /api/{id}, /api/{id}/replace): the caller, then the
 * spec's limits, then the account's D1 session.
 */
export const uploads = routeGroup(identifyCaller, rateLimits("api"), accountSession)
  .post("/", describeUpload, requireKey("any"), plainTextUrl, (c) => handleUpload(c, deps(c)))
  .get("/", describeList, requireKey("full"), validate("query", listQuery), async (c) => {
    const { rows, meta } = await listPage(deps(c), c.var.caller.accountId, pageAsked(c.req.valid("query")));
    const origin = publicOrigin(c);
    const data = await Promise.all(rows.map((row) => presentUpload(row, origin, linkSigning(c))));
    return envelope(c, listResponseSchema, { data, meta });
  })
  .all("/", methodNotAllowed("GET", "POST"))
  // Either key: a refused upload tells the upload-only key as much, and the uploader page shows it.
  .get("/usage", describeUsage, requireKey("any"), async (c) => {
    const data = await readUsageAnswer(c.var.db, c.var.caller.accountId, settingsOf(c.env).quotas);
    return envelope(c, usageResponseSchema, { data });
  })
  .all("/usage", methodNotAllowed("GET"))

  .get(`/${UPLOAD_ID_PARAM}`, describeGet, requireKey("full"), getOne)
  .patch(`/${UPLOAD_ID_PARAM}`, describeChange, requireKey("full"), changeOne)
  .delete(`/${UPLOAD_ID_PARAM}`, describeDelete, requireKey("full"), removeOne)
  .all(`/${UPLOAD_ID_PARAM}`, methodNotAllowed("GET", "PATCH", "DELETE"))
  .post(`/${UPLOAD_ID_PARAM}/replace`, describeReplace, requireKey("full"), replaceOne)
  .all(`/${UPLOAD_ID_PARAM}/replace`, methodNotAllowed("POST"))
  // Ids no upload can have, answered as an unknown id is; not in the document.
  .get(`/${OTHER_ID_PARAM}`, requireKey("full"), getOne)
  .patch(`/${OTHER_ID_PARAM}`, requireKey("full"), changeOne)
  .delete(`/${OTHER_ID_PARAM}`, requireKey("full"), removeOne)
  .all(`/${OTHER_ID_PARAM}`, methodNotAllowed("GET", "PATCH", "DELETE"))
  .post(`/${OTHER_ID_BEFORE_REPLACE}/replace`, requireKey("full"), replaceOne)
  .all(`/${OTHER_ID_BEFORE_REPLACE}/replace`, methodNotAllowed("POST"));
