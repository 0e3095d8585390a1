import { type Context, Hono } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";
import { identifyCaller, requireKey } from "../http/auth";
import { rateLimits } from "../http/throttles/rate-limits";
import { NO_STORE } from "../http/cache-control";
import { accountSession, apiSession } from "../http/d1-sessions";
import { readFields } from "../http/body";
import { linkSigning, publicOrigin } from "../http/request-info";
import { parseOrThrow } from "../errors";
import { validate } from "../http/validation";
import { changeUpload } from "../uploads/change";
import { requestStores } from "../deps";
import { presentUpload } from "../uploads/present";
import { getOwnedUpload, listPage } from "../uploads/read";
import { removeOwnedUpload } from "../uploads/remove";
import { methodNotAllowed } from "../http/method-not-allowed";
import { routeGroup } from "../http/route-group";
import { openApiRoute } from "./openapi";
import {
  describeChange,
  describeChunk,
  describeDelete,
  describeGet,
  describeList,
  describeReplace,
  describeUpload,
  describeUsage,
} from "./openapi-operations";
import { readUsageAnswer } from "../accounts/quotas";
import { settingsOf } from "../settings";
import { assertExpiryAllowed, changeBody } from "../uploads/schemas/requests";
import { listQuery } from "./schemas";
import { deletedResponse, listResponse, uploadItemResponse, usageResponse } from "./responses";
import { handleChunk } from "./chunk";
import { handleReplace, handleUpload } from "./upload";
import { plainTextUrl } from "./plain-text";
import { chevereto } from "./compat/chevereto";
import { lsky } from "./compat/lsky";
import { tusCreation, tusUploads } from "./tus";
import { albumRoutes } from "./albums";
import { OTHER_ID_BEFORE_REPLACE, OTHER_ID_PARAM, UPLOAD_ID_PARAM } from "./upload-id-paths";

const deps = requestStores;

/**
 * Pieces of a large file, on their own budget. They are never read back through the API, so their
 * session stays the one opened on the primary (its first query ran there) and their writes are
 * not noted for the account's reads.
 */
const pieces = routeGroup(identifyCaller, rateLimits("pieces"))
  // Either key may send pieces: an upload-only key must be able to upload a large file.
  .post("/chunk", describeChunk, requireKey("any"), (c) => handleChunk(c, deps(c)))
  .all("/chunk", methodNotAllowed("POST"));

/** One upload's operations, the same for a well-formed id and for one no upload can have. */
type OneUpload = Context<AppEnv, "/:id">;
const getOne = async (c: OneUpload) => {
  const row = await getOwnedUpload(deps(c), c.var.caller.accountId, c.req.param("id"));
  return uploadItemResponse(c, await presentUpload(row, publicOrigin(c), linkSigning(c)));
};
const changeOne = async (c: OneUpload) => {
  const patch = parseOrThrow(changeBody, await readFields(c.req.raw));
  assertExpiryAllowed(patch.expires_in, settingsOf(c.env).expiresInMax);
  const row = await changeUpload(deps(c), c.var.caller.accountId, c.req.param("id"), patch);
  return uploadItemResponse(c, await presentUpload(row, publicOrigin(c), linkSigning(c)));
};
const removeOne = async (c: OneUpload) => {
  await removeOwnedUpload(deps(c), c.var.caller.accountId, c.req.param("id"));
  return deletedResponse(c);
};
const replaceOne = (c: OneUpload) => handleReplace(c, deps(c));

/** Every other operation: the caller, then the spec's limits, then the account's D1 session. */
const uploads = routeGroup(identifyCaller, rateLimits("api"), accountSession)
  .post("/", describeUpload, requireKey("any"), plainTextUrl, (c) => handleUpload(c, deps(c)))
  .get("/", describeList, requireKey("full"), validate("query", listQuery), async (c) => {
    const { page } = c.req.valid("query");
    const { rows, meta } = await listPage(deps(c), c.var.caller.accountId, page);
    const origin = publicOrigin(c);
    return listResponse(c, await Promise.all(rows.map((row) => presentUpload(row, origin, linkSigning(c)))), meta);
  })
  .all("/", methodNotAllowed("GET", "POST"))
  // Either key: a refused upload tells the upload-only key as much, and the uploader page shows it.
  .get("/usage", describeUsage, requireKey("any"), async (c) => {
    return usageResponse(c, await readUsageAnswer(c.var.db, c.var.caller.accountId, settingsOf(c.env).quotas));
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

/**
 * Answers are an account's own, may carry signed links, and may come for a key in the query: no
 * cache keeps them.
 */
const noStore = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  c.header("Cache-Control", NO_STORE);
});

export const api = new Hono<AppEnv>()
  // Generated from this router: an operation is in the document when its first handler is its
  // description (openapi-operations.ts).
  .get(
    "/openapi.json",
    openApiRoute((): Hono<AppEnv> => api),
  )
  .all("/openapi.json", methodNotAllowed("GET"))
  // Every other request, an operation's or an unknown path's.
  .use(noStore)
  .use(apiSession)
  // The groups' paths do not overlap (an id is matched by its shape: upload-id-paths.ts), so their
  // order only sets the order of the document's paths.
  // Ways in that other tools speak (Chevereto's /1/upload, Lsky Pro's /v1/upload).
  .route("/", chevereto)
  .route("/", lsky)
  .route("/", pieces)
  .route("/", tusCreation)
  .route("/", tusUploads)
  .route("/", albumRoutes)
  .route("/", uploads);
