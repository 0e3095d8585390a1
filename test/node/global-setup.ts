import net from "node:net";
import type { TestProject } from "vitest/node";
import { generateTestMedia } from "../support/media.ts";
import { rm } from "node:fs/promises";
import { portInUse } from "../../scripts/lib/server.mjs";
import { makeMigratedState, startSharedServers } from "./server.ts";

/**
 * The usual devtools port (wrangler dev's default, 9229), held for the run unless another process
 * (a running `npm run dev`) already holds it: every server of the run then starts as it would
 * beside that one, and ports.test.ts checks that the shared servers did. Undefined: already held.
 */
async function holdDevtoolsPort(): Promise<net.Server | undefined> {
  if (await portInUse(9229)) return undefined;
  const holder = net.createServer();
  await new Promise<void>((resolve, reject) => holder.once("error", reject).listen(9229, "127.0.0.1", resolve));
  return holder;
}

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
  const holder = await holdDevtoolsPort();
  project.provide("devtoolsPortHeld", await portInUse(9229));
  const shared = await startSharedServers(migrated.dir);
  project.provide("migratedState", migrated.dir);
  project.provide("sharedServers", shared.dir);
  return async () => {
    await shared.stop();
    await new Promise((resolve) => (holder ? holder.close(resolve) : resolve(undefined)));
    await migrated.ready.catch(() => {});
    await rm(migrated.dir, { recursive: true, force: true });
  };
}
