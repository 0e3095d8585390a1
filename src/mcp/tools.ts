import type { McpServer } from "@modelcontextprotocol/server";
import type { Context } from "hono";
import { type Stores, uploadCall } from "../deps";
import type { AppEnv } from "../env";
import { assertFullKey } from "../http/auth";
import { ALBUM_TOOLS } from "./album-tools";
import type { Tool, ToolRequest } from "./tool-definition";
import { toolError } from "./tool-results";
import { UPLOAD_TOOLS } from "./upload-tools";

/** Every tool, in the order tools/list names them. */
const TOOLS: Tool[] = [...UPLOAD_TOOLS, ...ALBUM_TOOLS];

/** The request a tool call came in, what it may draw on, and a refusal the route decided already. */
export interface ToolCall {
  c: Context<AppEnv>;
  deps: Stores;
  /** The request's rate limits were used up: every tool answers this instead of working. */
  refused: Error | null;
}

/**
 * The service's operations as MCP tools (the table above), on the caller of this request. A tool
 * refused (the rate limits, its key kind) or failing answers as a tool error.
 */
export function registerTools(server: McpServer, { c, deps, refused }: ToolCall) {
  const request: ToolRequest = { deps, call: uploadCall(c) };
  for (const tool of TOOLS) {
    const { name, title, description, input, output, annotations } = tool;
    const config = { title, description, inputSchema: input, outputSchema: output, annotations };
    server.registerTool(name, config, async (args) => {
      try {
        if (refused) throw refused;
        if (tool.key === "full") assertFullKey(c);
        return await tool.run(args, request);
      } catch (error) {
        return toolError(error, c.var.requestId);
      }
    });
  }
}
