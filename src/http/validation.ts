import { zValidator } from "@hono/zod-validator";
import type { ValidationTargets } from "hono";
import type { z } from "zod";
import { unprocessable } from "../errors";

/** "field: message" for the first problem, which is what a person fixing a request needs. */
function describeIssues(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "Invalid request.";
  const field = issue.path.join(".");
  return field ? `${field}: ${issue.message}` : issue.message;
}

export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw unprocessable(describeIssues(result.error));
  return result.data;
}

/** zValidator whose failures become the service's 422 error envelope. */
export const validate = <Target extends keyof ValidationTargets, T extends z.ZodType>(target: Target, schema: T) =>
  zValidator(target, schema, (result) => {
    if (!result.success) throw unprocessable(describeIssues(result.error as unknown as z.ZodError));
  });
