import { requestStores } from "../../deps";
import { identifyCaller, requireKey } from "../../http/auth";
import { methodNotAllowed } from "../../http/method-not-allowed";
import { routeGroup } from "../../http/route-group";
import { rateLimits } from "../../http/throttles/rate-limits";
import { describeChunk } from "./openapi";
import { handleChunk } from "./receive";

/**
 * Pieces of a large file (POST /api/chunk), on their own budget. They are never read back through
 * the API, so their session stays the one opened on the primary (its first query ran there) and
 * their writes are not noted for the account's reads.
 */
export const pieces = routeGroup(identifyCaller, rateLimits("pieces"))
  // Either key may send pieces: an upload-only key must be able to upload a large file.
  .post("/chunk", describeChunk, requireKey("any"), (c) => handleChunk(c, requestStores(c)))
  .all("/chunk", methodNotAllowed("POST"));
