import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";
import { NO_STORE } from "../http/cache-control";
import { apiSession } from "../http/d1-sessions";
import { methodNotAllowed } from "../http/method-not-allowed";
import { mountGroups } from "../http/route-group";
import { albumRoutes } from "./albums";
import { chevereto } from "./compat/chevereto";
import { keyRoutes } from "./keys";
import { lsky } from "./compat/lsky";
import { openApiRoute } from "./openapi/document";
import { pieces } from "./pieces";
import { signingSecretRoutes } from "./signing-secret";
import { signInLinkRoutes } from "./sign-in-links";
import { tusCreation, tusUploads } from "./tus";
import { uploads } from "./uploads";
import { webhookRoutes } from "./webhooks";

/**
 * Answers are an account's own, may carry signed links, and may come for a key in the query: no
 * cache keeps them.
 */
const noStore = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  c.header("Cache-Control", NO_STORE);
});

/** The API face: each resource's routes are in its folder, with their OpenAPI descriptions beside them. */
export const api = new Hono<AppEnv>()
  // Generated from this router: an operation is in the document when its first handler is its
  // description (uploads/openapi.ts).
  .get(
    "/openapi.json",
    openApiRoute((): Hono<AppEnv> => api),
  )
  .all("/openapi.json", methodNotAllowed("GET"))
  // Every other request, an operation's or an unknown path's.
  .use(noStore)
  .use(apiSession);

// The groups' paths do not overlap (an id is matched by its shape: uploads/id-paths.ts), so their
// order only sets the order of the document's paths. First, the ways in that other tools speak
// (Chevereto's /1/upload, Lsky Pro's /v1/upload).
mountGroups(
  api,
  chevereto,
  lsky,
  pieces,
  tusCreation,
  tusUploads,
  albumRoutes,
  webhookRoutes,
  signingSecretRoutes,
  signInLinkRoutes,
  keyRoutes,
  uploads,
);
