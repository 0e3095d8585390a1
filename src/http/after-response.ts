import type { Context } from "hono";
import type { AppEnv } from "../env";

/**
 * Keeps the Worker alive for `work` that outlasts the response. Its failure is logged, never
 * left as a rejected promise: whatever it does is redone later (the cron job re-drives media
 * jobs; records and bookmarks are made again on the next request).
 */
export function afterResponse(c: Context<AppEnv>, what: string, work: Promise<unknown>) {
  const logged = work.catch((error) =>
    console.error(JSON.stringify({ requestId: c.var.requestId, afterResponse: what, error: String(error) })),
  );
  try {
    c.executionCtx.waitUntil(logged);
  } catch {
    // No execution context (a bare app.request): the work runs on unattended.
  }
}
