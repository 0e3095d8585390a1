import { resolver } from "hono-openapi";
import type { z } from "zod";
import { errorResponseSchema } from "../schemas";

/**
 * How every operation's description names its answers: a JSON body of a schema the responses
 * are typed against, rendered as the service sends it ("output"), and the error envelope.
 */
export const json = (schema: z.ZodType, description = "Success") => ({
  description,
  content: { "application/json": { schema: resolver(schema, { options: { io: "output" } }) } },
});

export const error = (description: string) => json(errorResponseSchema, description);

/* Refusals that several resources' operations share, in the same words. */

export const anyKey = error("Missing or invalid API key.");
export const banned = error("Account or IP banned from uploading.");
export const throttled = error("Rate limit exceeded.");
