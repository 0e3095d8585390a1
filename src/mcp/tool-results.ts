import type { CallToolResult } from "@modelcontextprotocol/server";
import { ApiError } from "../errors";
import type { UploadRow } from "../model/schema";
import { locked } from "../model/policy";
import { MiB } from "../model/spec-limits";

/**
 * A tool's answer: its structured content, and the same as JSON text for clients that read only
 * text. Where it helps an agent see what it has, an image's thumbnail follows as image content.
 */
export function toolResult<T extends Record<string, unknown>>(structured: T, thumbnail?: ImageContent | null) {
  const content: CallToolResult["content"] = [{ type: "text", text: JSON.stringify(structured) }];
  if (thumbnail) content.push(thumbnail);
  return { content, structuredContent: structured };
}

/**
 * A refusal as an agent can act on it: the API's own message, with the status it would have
 * been, and when to retry. It is a tool result with `isError` (the call reached the service and
 * was answered), not a protocol error, as MCP asks of errors in a tool's own work.
 */
export function toolError(error: unknown, requestId: string): CallToolResult {
  if (!(error instanceof ApiError)) {
    console.error(JSON.stringify({ requestId, mcpTool: String(error), stack: (error as Error)?.stack }));
    error = new ApiError(500, `Internal server error (request ${requestId}). It is safe to retry.`);
  }
  const { status, message, headers } = error as ApiError;
  const retry = headers["Retry-After"] ? `, retry after ${headers["Retry-After"]} s` : "";
  return { isError: true, content: [{ type: "text", text: `${message} (HTTP ${status}${retry})` }] };
}

type ImageContent = { type: "image"; data: string; mimeType: string };

/** A thumbnail is sent inline only while small: they are 280 px WebP, a few KiB. */
const THUMBNAIL_INLINE_MAX = MiB / 4;

/**
 * The upload's thumbnail as image content, when it has one and it is open to see: a locked
 * upload's thumbnail is served only by signed link, and stays out of the answer.
 */
export async function thumbnailContent(bucket: R2Bucket, row: UploadRow): Promise<ImageContent | null> {
  if (!row.thumbKey || locked.of(row)) return null;
  const object = await bucket.get(row.thumbKey);
  if (!object) return null;
  if (object.size > THUMBNAIL_INLINE_MAX) {
    await object.body.cancel();
    return null;
  }
  const bytes = new Uint8Array(await object.arrayBuffer());
  let binary = "";
  for (let at = 0; at < bytes.length; at += 0x8000) binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  return { type: "image", data: btoa(binary), mimeType: object.httpMetadata?.contentType ?? "image/webp" };
}
