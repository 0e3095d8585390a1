import { Hono } from "hono";
import type { AppEnv } from "../../env";
import { requireKey } from "../../http/auth";
import { apiGate } from "../../limits/middleware";
import { NO_STORE } from "../../http/cache-control";
import { apiSession } from "../../http/d1-sessions";
import { readFields } from "../../http/body";
import { linkSigning, publicOrigin } from "../../http/request-info";
import { parseOrThrow, validate } from "../../http/validation";
import { changeUpload } from "../../uploads/change";
import { requestDeps } from "../../bindings";
import { presentUpload } from "../../uploads/present";
import { getOwnedUpload, listPage } from "../../uploads/read";
import { removeOwnedUpload } from "../../uploads/remove";
import { methodNotAllowed } from "../method-not-allowed";
import { openApiRoute } from "./openapi";
import {
  describeChange,
  describeChunk,
  describeDelete,
  describeGet,
  describeList,
  describeReplace,
  describeUpload,
} from "./openapi-operations";
import { changeBody, listQuery } from "./schemas";
import { deletedResponse, listResponse, uploadItemResponse } from "./responses";
import { handleChunk } from "./chunk";
import { handleReplace, handleUpload } from "./upload";

const deps = requestDeps;

export const api = new Hono<AppEnv>()
  // Generated from this router: an operation is in the document when its first handler is its
  // description (openapi-operations.ts).
  .get("/openapi.json", openApiRoute((): Hono<AppEnv> => api))
  .all("/openapi.json", methodNotAllowed("GET"))

  // Answers are an account's own, may carry signed links, and may come for a key in the query:
  // no cache keeps them.
  .use("*", async (c, next) => {
    await next();
    c.header("Cache-Control", NO_STORE);
  })

  .use("*", apiSession)

  // Every operation of the API, whatever its method: key resolved, request counted.
  .use("/", apiGate)
  .use("/:id", apiGate)
  .use("/:id/replace", apiGate)

  // Either key may send pieces: an upload-only key must be able to upload a large file.
  .post("/chunk", describeChunk, requireKey("any"), (c) => handleChunk(c, deps(c)))
  .all("/chunk", methodNotAllowed("POST"))

  .post("/", describeUpload, requireKey("any"), (c) => handleUpload(c, deps(c)))
  .get("/", describeList, requireKey("full"), validate("query", listQuery), async (c) => {
    const { page } = c.req.valid("query");
    const { rows, meta } = await listPage(deps(c), c.var.caller.accountId, page);
    const origin = publicOrigin(c);
    return listResponse(c, await Promise.all(rows.map((row) => presentUpload(row, origin, linkSigning(c)))), meta);
  })
  .all("/", methodNotAllowed("GET", "POST"))

  .get("/:id", describeGet, requireKey("full"), async (c) => {
    const row = await getOwnedUpload(deps(c), c.var.caller.accountId, c.req.param("id"));
    return uploadItemResponse(c, await presentUpload(row, publicOrigin(c), linkSigning(c)));
  })
  .patch("/:id", describeChange, requireKey("full"), async (c) => {
    const patch = parseOrThrow(changeBody, await readFields(c.req.raw));
    const row = await changeUpload(deps(c), c.var.caller.accountId, c.req.param("id"), patch);
    return uploadItemResponse(c, await presentUpload(row, publicOrigin(c), linkSigning(c)));
  })
  .delete("/:id", describeDelete, requireKey("full"), async (c) => {
    await removeOwnedUpload(deps(c), c.var.caller.accountId, c.req.param("id"));
    return deletedResponse(c);
  })
  .all("/:id", methodNotAllowed("GET", "PATCH", "DELETE"))
  .post("/:id/replace", describeReplace, requireKey("full"), (c) => handleReplace(c, deps(c)))
  .all("/:id/replace", methodNotAllowed("POST"));
