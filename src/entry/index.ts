import { createApp } from "./app";
import { scheduled, sweepsOrphans } from "./cron";
import type { Env } from "../env";
import { consumeDeliveries } from "./webhook-queue";

export { RateLimiter } from "../limits/rate-limiter";
export { MediaContainer } from "../media/container";
export { MediaJobWorkflow } from "./media-job-workflow";
export { VariantLocks } from "../uploads/variants/variant-locks";

const app = createApp();

export default {
  fetch: app.fetch,
  // Awaited, not left to waitUntil: a cron run's work is its invocation's own, which may run
  // longer than the 30 s that work after a response gets.
  scheduled: (controller, env) => scheduled(env, Date.now, { orphans: sweepsOrphans(controller.scheduledTime) }),
  queue: consumeDeliveries,
} satisfies ExportedHandler<Env>;
