import { bodyLimit } from "hono/body-limit";
import { concatBytes } from "../bytes";
import { MAX_TEXT_BODY_BYTES } from "../model/spec-limits";
import { badRequest, tooLarge, unprocessable } from "../errors";

const TOO_LARGE = () => tooLarge(`Request body over ${MAX_TEXT_BODY_BYTES} bytes.`);

/** For routes whose bodies are a few text fields: 413 past the limit, streamed or declared. */
export const smallBody = bodyLimit({
  maxSize: MAX_TEXT_BODY_BYTES,
  onError: () => {
    throw TOO_LARGE();
  },
});

/** The whole body, refusing (413) more than `max` bytes whether or not a length was declared. */
export async function readLimited(request: Request, max: number, refuse = TOO_LARGE): Promise<Uint8Array> {
  if (Number(request.headers.get("content-length") ?? 0) > max) throw refuse();
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let length = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.byteLength;
    if (length > max) {
      await reader.cancel().catch(() => {});
      throw refuse();
    }
    chunks.push(value);
  }
  return concatBytes(chunks);
}

/**
 * A small body of fields sent as JSON, urlencoded or multipart form (files in it are ignored).
 * An empty body is no fields.
 */
export async function readFields(request: Request): Promise<Record<string, unknown>> {
  const type = request.headers.get("content-type") ?? "";
  const bytes = await readLimited(request, MAX_TEXT_BODY_BYTES);
  if (new TextDecoder().decode(bytes).trim() === "") return {};
  const lower = type.toLowerCase();
  if (lower.startsWith("application/json") || /^[^;]+\+json/.test(lower)) return parseJsonObject(bytes);
  if (lower.startsWith("application/x-www-form-urlencoded") || lower.startsWith("multipart/form-data")) {
    try {
      const form = await new Response(bytes, { headers: { "Content-Type": type } }).formData();
      return Object.fromEntries([...form.entries()].filter(([, v]) => typeof v === "string"));
    } catch {
      throw badRequest("Malformed form body.");
    }
  }
  throw unprocessable("Send the fields as JSON, application/x-www-form-urlencoded or multipart/form-data.");
}

function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw badRequest("Malformed JSON body.");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw badRequest("The JSON body must be an object.");
  }
  return value as Record<string, unknown>;
}
