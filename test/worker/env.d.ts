import type { D1Migration } from "cloudflare:test";

// The Worker's own bindings come from worker-configuration.d.ts; these are the tests' additions.
declare global {
  namespace Cloudflare {
    interface Env {
      TEST_MIGRATIONS: D1Migration[];
      /** test/fixtures by relative path (and generated/ media): `env.FIXTURES.fetch("http://f/tiny/gif.gif")`. */
      FIXTURES: Fetcher;
      /** The loopback fixture web server for link uploads (test/support/link-server.ts). */
      LINK_SERVER_URL: string;
      /** The loopback webhook receiver (test/support/webhook-receiver.ts). */
      WEBHOOK_RECEIVER_URL: string;
      /** Seed and runs per property of the fuzz suite; empty for its fixed defaults. */
      FUZZ_SEED: string;
      FUZZ_RUNS: string;
    }
  }
}
