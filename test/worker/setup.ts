import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);

// strayObjects() (helpers.ts) counts only what this file stored: files sharing a workerd run one after another.
(globalThis as { testFileStartedAt?: number }).testFileStartedAt = Date.now();
