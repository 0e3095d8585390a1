import { createApp } from "./app";
import { scheduled } from "./cron";
import type { Env } from "./env";

export { RateLimiter } from "./limits/rate-limiter";
export { MediaContainer } from "./media/container";
export { MediaJobWorkflow } from "./uploads/media-jobs/workflow";

const app = createApp();

export default {
  fetch: app.fetch,
  scheduled: (_controller, env, ctx) => ctx.waitUntil(scheduled(env)),
} satisfies ExportedHandler<Env>;
