import type { D1Migration } from "cloudflare:test";
import type { Env as AppBindings } from "../../src/env";

declare global {
  namespace Cloudflare {
    interface GlobalProps {
      mainModule: typeof import("../../src/index");
    }
    interface Env extends AppBindings {
      TEST_MIGRATIONS: D1Migration[];
      /** test/fixtures by relative path (and generated/ media): `env.FIXTURES.fetch("http://f/tiny/gif.gif")`. */
      FIXTURES: Fetcher;
      /** The loopback fixture web server for link uploads (test/support/link-server.ts). */
      LINK_SERVER_URL: string;
      /** Seed and runs per property of the fuzz suite; empty for its fixed defaults. */
      FUZZ_SEED: string;
      FUZZ_RUNS: string;
    }
  }
}
