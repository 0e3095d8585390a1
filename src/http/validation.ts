import { zValidator } from "@hono/zod-validator";
import type { ValidationTargets } from "hono";
import type { z } from "zod";
import { describeIssues, unprocessable } from "../errors";

/** zValidator whose failures become the service's 422 error envelope. */
export const validate = <Target extends keyof ValidationTargets, T extends z.ZodType>(target: Target, schema: T) =>
  zValidator(target, schema, (result) => {
    if (!result.success) throw unprocessable(describeIssues(result.error as unknown as z.ZodError));
  });
