import { Hono, type ErrorHandler } from "hono";
import { cors } from "hono/cors";
import { TrieRouter } from "hono/router/trie-router";
import { TUS_REQUEST_HEADERS, TUS_RESPONSE_HEADERS, tusDiscovery } from "../api/tus/protocol";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppEnv } from "../env";
import { ApiError, errorBody } from "../errors";
import { NO_STORE } from "../http/cache-control";
import { BOOKMARK_HEADER } from "../http/d1-sessions";
import { noteWorkersDev } from "../http/workers-dev";
import { randomBase62 } from "../crypto";
import { database } from "../storage/db";
import { admin } from "../api/admin";
import { api } from "../api";
import { MCP_METADATA_PATH, mcp, mcpMetadata } from "../mcp";
import { files } from "../files/index";
import { pages } from "../site/pages";
import { listings } from "../site/listings";
import { albumPages } from "../site/album-pages";
import { dashboard } from "../site/app";
import { requireSignIn, sameOriginOnly } from "../http/signed-in";

/** Upload-only keys are meant for browsers, so the API answers cross-origin requests. */
const apiCors = cors({
  origin: "*",
  allowMethods: ["GET", "HEAD", "POST", "PATCH", "DELETE", "OPTIONS"],
  // Authorization: the key of the tools made for Lsky Pro (/api/v1/upload), from a browser too.
  allowHeaders: ["X-API-Key", "Authorization", "Content-Type", BOOKMARK_HEADER, ...TUS_REQUEST_HEADERS],
  exposeHeaders: [
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "Retry-After",
    "X-Request-Id",
    BOOKMARK_HEADER,
    ...TUS_RESPONSE_HEADERS,
  ],
  maxAge: 86400,
});

/** Agent clients in a browser (the MCP Inspector's) send their own headers: each is allowed as asked. */
const mcpCors = cors({
  origin: "*",
  allowMethods: ["GET", "POST", "DELETE", "OPTIONS"],
  exposeHeaders: ["Mcp-Session-Id", "WWW-Authenticate", "X-RateLimit-Limit", "X-RateLimit-Remaining", "Retry-After"],
  maxAge: 86400,
});

/**
 * The one error handler: an ApiError or Hono's HTTPException answers as it says, anything else is
 * logged with its request id and answered 500. Errors are kept by no cache.
 */
const answerError: ErrorHandler<AppEnv> = (error, c) => {
  c.header("Cache-Control", NO_STORE);
  if (error instanceof ApiError) return c.json(errorBody(error.message), error.status, error.headers);
  if (error instanceof HTTPException) {
    const status = error.status as ContentfulStatusCode;
    return c.json(errorBody(error.message || "Bad request."), status);
  }
  const requestId = c.var.requestId ?? "unknown";
  console.error(
    JSON.stringify({
      requestId,
      method: c.req.method,
      path: c.req.path,
      error: String(error),
      stack: (error as Error)?.stack,
    }),
  );
  return c.json(errorBody(`Internal server error (request ${requestId}). It is safe to retry.`), 500);
};

export function createApp(options: { now?: () => number } = {}) {
  // The router SmartRouter would settle on anyway: RegExpRouter refuses a fixed segment beside a
  // parameter at one place (/api/usage and /api/{id}, /admin and the file URLs' /{id}), and trying
  // it first cost each isolate's first request about 0.4 ms (docs/architecture.md, Routes).
  const app = new Hono<AppEnv>({ strict: false, router: new TrieRouter() });
  const now = options.now ?? Date.now;

  app.use("*", async (c, next) => {
    c.set("requestId", c.req.header("CF-Ray") ?? randomBase62(16));
    c.set("db", database(c.env.DB));
    c.set("now", now);
    noteWorkersDev(c.req.url);
    await next();
    c.header("X-Request-Id", c.var.requestId);
  });

  // The tus endpoint's discovery rides on the CORS answer to OPTIONS.
  app.use("/api/tus", tusDiscovery);
  app.use("/api/tus/*", tusDiscovery);
  app.use("/api/*", apiCors);
  app.use("/mcp", mcpCors);

  app.route("/api", api);
  // The dashboard's pages call the API as the signed-in account: the same routes, the session in
  // place of a key, and only from the service's own pages (no CORS; Origin and CSRF checked).
  app.use("/app/api/*", sameOriginOnly, requireSignIn("json"));
  app.route("/app/api", api);
  app.route("/mcp", mcp);
  app.route(MCP_METADATA_PATH, mcpMetadata);
  app.route("/admin", admin);
  app.route("/", files);
  app.route("/", pages);
  app.route("/", listings);
  app.route("/", albumPages);
  app.route("/", dashboard);

  // Errors are kept by no cache: a 404 or 410 is about the upload as it is now, a 429 about this moment.
  app.notFound((c) => c.json(errorBody("Not found."), 404, { "Cache-Control": NO_STORE }));

  app.onError(answerError);

  return app;
}
