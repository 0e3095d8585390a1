// First: the SDK's validator reads `location` as its module loads (see location-stand-in).
import "../media/image/location-stand-in";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import type { Context } from "hono";
import { requestStores } from "../deps";
import type { AppEnv } from "../env";
import { registerTools } from "./tools";

/*
 * The MCP SDK's side of /mcp, loaded by the route (index.ts) when its first request comes.
 */

const SERVER_INFO = { name: "media-host", version: "1.0.0" };
const INSTRUCTIONS =
  "Image and video hosting. Upload from a link or a small inline file, then share `src` (the permanent " +
  "direct link) or `direct` (the share page). An upload-only key may only upload.";

/** A JSON-RPC message (or a batch of them) as the route reads it; null when it is not JSON. */
export type Message = { method?: unknown } | { method?: unknown }[] | null;

/**
 * The SDK's own handler's answer to `request`, with a fresh server whose tools act for the
 * request's caller; `refused` is the rate limits' refusal, which a tool call answers as its error.
 */
export function answer(c: Context<AppEnv>, request: Request, message: Message, refused: Error | null) {
  // "auto": JSON, as no tool sends anything before its result.
  const handler = createMcpHandler(() => {
    const server = new McpServer(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
    registerTools(server, { c, deps: requestStores(c), refused });
    return server;
  });
  return handler.fetch(request, message ? { parsedBody: message } : undefined);
}
