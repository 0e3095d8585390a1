import { Hono, type Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";
import { ApiError, tooLarge } from "../errors";
import { bearerOrPresentedKey, identifyCallerBy } from "../http/auth";
import { readLimited } from "../http/body";
import { NO_STORE } from "../http/cache-control";
import { accountSession, apiSession } from "../http/d1-sessions";
import { publicOrigin } from "../http/request-info";
import { drawRateLimits } from "../http/throttles/rate-limits";
import { isolateMemory } from "../limits/isolate-memory";
import { LARGER_FILES, MCP_BODY_BYTES } from "./inline-file";
import type { Message } from "./server";

/**
 * The service as a remote MCP server (Streamable HTTP) at /mcp, for AI agents: stateless, one
 * fresh server per request from the SDK's own handler, which serves clients of the 2026-07-28
 * revision and, through its stateless fallback, those that open with the earlier handshake. No
 * session is kept anywhere, so no Durable Object is needed and any isolate answers any request.
 *
 * The same keys as the API (X-API-Key, or `Authorization: Bearer`, which agent clients send),
 * the same rate limits, and the API's own operations under the tools.
 *
 * The SDK and the tools (server.ts) are loaded with the first request that reaches them, not as
 * the isolate starts: the SDK builds its protocol schemas as it loads, which every cold start
 * would otherwise pay for, MCP or not (13-25 ms of a start of 210-310 ms in `wrangler check
 * startup`'s profiles).
 */
let server: Promise<typeof import("./server")> | undefined;
const loadServer = () => (server ??= import("./server"));

/** Where the protected-resource metadata of /mcp is served (RFC 9728: the well-known prefix, then /mcp). */
export const MCP_METADATA_PATH = "/.well-known/oauth-protected-resource/mcp";

const metadataUrl = (c: Context<AppEnv>) => `${publicOrigin(c)}${MCP_METADATA_PATH}`;

/**
 * A missing or wrong key: the API's 401, with the challenge MCP clients read. It names the
 * protected-resource metadata (RFC 9728), so that OAuth can be offered later without changing
 * clients; today it lists no authorization server, and a key is the way in.
 */
const refuseKey = (c: Context<AppEnv>) =>
  new ApiError(401, "Missing or invalid API key: send it as `Authorization: Bearer <key>` or `X-API-Key`.", {
    "WWW-Authenticate": `Bearer resource_metadata="${metadataUrl(c)}"`,
  });

const tooLargeBody = () =>
  tooLarge(`MCP request over ${MCP_BODY_BYTES / 1024 / 1024} MiB: inline files are for small images. ${LARGER_FILES}`);

function parseMessage(bytes: Uint8Array): Message {
  try {
    const value: unknown = JSON.parse(new TextDecoder().decode(bytes));
    return typeof value === "object" ? (value as Message) : null;
  } catch {
    return null;
  }
}

/**
 * Serves one request. The body is read here, within MCP_BODY_BYTES and counted against the
 * isolate's memory (its text, the parsed message and an inline file's bytes), and handed to the
 * SDK parsed. Each message counts against the rate limits as one API request. A tool call over
 * them is still answered as a tool's error, which an agent reads and can wait on; anything else
 * gets the API's 429.
 */
const serve = async (c: Context<AppEnv>) => {
  const post = c.req.method === "POST";
  const memory = isolateMemory.open();
  try {
    if (post)
      await memory.growTo(4 * Math.min(MCP_BODY_BYTES, Number(c.req.header("content-length")) || MCP_BODY_BYTES));
    const bytes = post ? await readLimited(c.req.raw, MCP_BODY_BYTES, tooLargeBody) : null;
    const message = bytes ? parseMessage(bytes) : null;
    const count = Array.isArray(message) ? Math.max(1, message.length) : 1;
    const toolCall = !Array.isArray(message) && message?.method === "tools/call";
    let refused: Error | null = null;
    try {
      await drawRateLimits(c, "api", count);
    } catch (error) {
      if (!toolCall) throw error;
      refused = error as Error;
    }
    const request = bytes
      ? new Request(c.req.raw.url, { method: "POST", headers: c.req.raw.headers, body: bytes })
      : c.req.raw;
    return await (await loadServer()).answer(c, request, message, refused);
  } finally {
    memory.release();
  }
};

const noStore = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  c.header("Cache-Control", NO_STORE);
});

export const mcp = new Hono<AppEnv>()
  .use(noStore)
  .use(apiSession)
  .use(identifyCallerBy(bearerOrPresentedKey, refuseKey))
  .use(accountSession)
  .all("/", serve);

/**
 * RFC 9728 protected-resource metadata for /mcp: the resource, and that it takes a bearer token
 * in the header. No authorization server is listed: the token is an API key.
 */
export const mcpMetadata = new Hono<AppEnv>().get("/", (c) =>
  c.json(
    {
      resource: `${publicOrigin(c)}/mcp`,
      bearer_methods_supported: ["header"],
      resource_name: "Media host MCP server",
      resource_documentation: `${publicOrigin(c)}/api/openapi.json`,
    },
    200,
    { "Cache-Control": "public, max-age=3600", "Access-Control-Allow-Origin": "*" },
  ),
);
