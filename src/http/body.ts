import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { MAX_TEXT_BODY_BYTES } from "../config";
import { badRequest, tooLarge, unprocessable } from "../errors";

/** For routes whose bodies are a few text fields: 413 past the limit, streamed or declared. */
export const smallBody = bodyLimit({
  maxSize: MAX_TEXT_BODY_BYTES,
  onError: () => {
    throw tooLarge(`Request body over ${MAX_TEXT_BODY_BYTES} bytes.`);
  },
});

/** A body of fields sent as JSON, urlencoded or multipart form; files in it are ignored. */
export async function readFields(c: Context): Promise<Record<string, unknown>> {
  const type = (c.req.header("content-type") ?? "").toLowerCase();
  if (type.startsWith("application/json") || type.endsWith("+json")) return readJsonObject(c);
  if (type.startsWith("application/x-www-form-urlencoded") || type.startsWith("multipart/form-data")) {
    try {
      const form = await c.req.parseBody();
      return Object.fromEntries(Object.entries(form).filter(([, v]) => typeof v === "string"));
    } catch {
      throw badRequest("Malformed form body.");
    }
  }
  if ((await c.req.text()).trim() === "") return {};
  throw unprocessable("Send the fields as JSON, application/x-www-form-urlencoded or multipart/form-data.");
}

export async function readJsonObject(c: Context): Promise<Record<string, unknown>> {
  let value: unknown;
  try {
    value = await c.req.json();
  } catch {
    throw badRequest("Malformed JSON body.");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw badRequest("The JSON body must be an object.");
  }
  return value as Record<string, unknown>;
}
