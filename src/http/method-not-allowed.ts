import type { Context } from "hono";
import { ApiError } from "../errors";

/** Registered after a path's real handlers: any other method gets 405 with an Allow header. */
export const methodNotAllowed =
  (...methods: string[]) =>
  (c: Context) => {
    const allow = methods.includes("GET") ? [...methods, "HEAD"] : methods;
    throw new ApiError(405, `Method ${c.req.method} is not allowed here. Allowed: ${allow.join(", ")}.`, {
      Allow: allow.join(", "),
    });
  };
