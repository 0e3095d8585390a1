import type { TestProject } from "vitest/node";
import { generateTestMedia } from "../support/media.ts";
import { startSharedServers } from "./server.ts";

/**
 * Made once for the Node test files: the generated media, and the servers that files share where
 * they need none of their own (test/node/server.ts, sharedTestServer and useMediaTestBed).
 */
export default async function setup(project: TestProject) {
  await generateTestMedia();
  const shared = await startSharedServers();
  project.provide("sharedServers", shared.urls);
  return () => shared.stop();
}
