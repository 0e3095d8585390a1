import { readFile } from "node:fs/promises";
import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { MEDIA_SECRET } from "./test/worker/global-setup";

/** Shared real-world files (../shared/fixtures), served to tests in workerd by a Node-side binding. */
const FIXTURES_DIR = path.resolve(import.meta.dirname, "../shared/fixtures");

async function serveFixture(request: Request): Promise<Response> {
  const name = decodeURIComponent(new URL(request.url).pathname).replace(/^\/+/, "");
  const file = path.resolve(FIXTURES_DIR, name);
  if (!file.startsWith(FIXTURES_DIR + path.sep)) return new Response("outside fixtures", { status: 400 });
  try {
    return new Response(await readFile(file));
  } catch {
    return new Response(`no fixture ${name}`, { status: 404 });
  }
}

export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.resolve(import.meta.dirname, "migrations"));
  return {
    test: {
      projects: [
        {
          plugins: [
            cloudflareTest(({ inject }) => ({
              wrangler: { configPath: "./wrangler.toml" },
              miniflare: {
                bindings: {
                  TEST_MIGRATIONS: migrations,
                  ADMIN_TOKEN: "test-admin-token",
                  MEDIA_SERVICE_URL: inject("mediaServiceUrl"),
                  MEDIA_SECRET,
                },
                serviceBindings: { FIXTURES: serveFixture },
              },
            })),
          ],
          test: {
            name: "worker",
            globalSetup: ["test/worker/global-setup.ts"],
            include: ["test/worker/**/*.test.ts"],
            setupFiles: ["test/worker/setup.ts"],
          },
        },
        {
          test: {
            name: "node",
            include: ["test/node/**/*.test.ts"],
            environment: "node",
            testTimeout: 120_000,
            hookTimeout: 120_000,
          },
        },
      ],
    },
  };
});
