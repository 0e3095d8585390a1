import type { ContentfulStatusCode } from "hono/utils/http-status";

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
