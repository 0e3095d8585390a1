import type { CallToolResult, ToolAnnotations } from "@modelcontextprotocol/server";
import type { z } from "zod";
import type { Stores } from "../deps";
import type { UploadCall } from "../uploads/pipeline";

/** What a tool's work is handed: the request's stores, and what the domain knows of the request. */
export interface ToolRequest {
  deps: Stores;
  /** The caller, the settings, the public origin and link signing, as the upload pipeline takes them. */
  call: UploadCall;
}

/**
 * One MCP tool: what tools/list says of it, the key kind it needs, and its call on the domain
 * with its checked arguments. Each answers as the API's operation would (the same checks, limits
 * and key kinds), with the same resources as structured content.
 */
export interface Tool<Input extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  input: Input;
  output: z.ZodObject;
  annotations: ToolAnnotations;
  /** As the API's route for the operation requires it (requireKey). */
  key: "any" | "full";
  run: (args: z.output<Input>, request: ToolRequest) => Promise<CallToolResult>;
}

/**
 * A tool as its table holds it: its arguments are typed by its input schema here, where it is
 * written, then forgotten so that one list holds every tool (the SDK checks them against the
 * same schema before `run`).
 */
export const tool = <Input extends z.ZodObject>(definition: Tool<Input>) => definition as unknown as Tool;
