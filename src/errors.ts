import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { z } from "zod";

/**
 * The one error type of the service. Anything thrown as an ApiError reaches the client as
 * `{type: "error", errors: message}` with its status; anything else becomes a 500.
 */
export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const badRequest = (message: string) => new ApiError(400, message);
export const unauthorized = (message = "Missing or invalid API key.") => new ApiError(401, message);
export const forbidden = (message: string) => new ApiError(403, message);
export const notFound = (message = "Not found.") => new ApiError(404, message);
export const tooLarge = (message: string) => new ApiError(413, message);
export const unprocessable = (message: string) => new ApiError(422, message);

export function errorBody(message: string) {
  return { type: "error" as const, errors: message };
}

/** "field: message" for the first problem, which is what a person fixing a request needs. */
export function describeIssues(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "Invalid request.";
  const field = issue.path.join(".");
  return field ? `${field}: ${issue.message}` : issue.message;
}

/** `value` as `schema` reads it; a 422 naming the first problem otherwise. */
export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw unprocessable(describeIssues(result.error));
  return result.data;
}
