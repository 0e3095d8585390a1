import type { Context } from "hono";
import type { z } from "zod";

/** What a success answer's schema describes: `{type: "success", ...}`. */
type SuccessSchema = z.ZodType<{ type: "success" }>;

/**
 * Every success answer of the API face (the operator's /admin too): `{type: "success"}`, then the
 * body's keys in the order written, which is the order clients have always received them. The
 * schema the answer is published as types the body, so a handler handing over the wrong shape
 * fails to compile; it is not run, so the body goes out as the domain made it.
 */
export function envelope<S extends SuccessSchema>(
  c: Context,
  _schema: S,
  body: Omit<z.infer<S>, "type">,
  status: 200 | 201 | 202 = 200,
) {
  return c.json({ type: "success" as const, ...body }, status);
}
