import type { TestProject } from "vitest/node";
import { generateTestMedia } from "../support/media.ts";
import { rm } from "node:fs/promises";
import { makeMigratedState, startSharedServers } from "./server.ts";

/**
 * Made once for the Node test files: the generated media, a migrated state that every test server
 * starts from, and the servers that files share where they need none of their own
 * (test/node/server.ts: makeMigratedState, sharedTestServer, useMediaTestBed).
 */
export default async function setup(project: TestProject) {
  await generateTestMedia();
  const migrated = await makeMigratedState();
  // A failure is told here; the servers then migrate their own state.
  migrated.ready.catch((error) => console.error(`the migrated test state was not made: ${error}`));
  const shared = await startSharedServers(migrated.dir);
  project.provide("migratedState", migrated.dir);
  project.provide("sharedServers", shared.dir);
  return async () => {
    await shared.stop();
    await migrated.ready.catch(() => {});
    await rm(migrated.dir, { recursive: true, force: true });
  };
}
