import type { TestProject } from "vitest/node";
import { startMediaService } from "../../scripts/lib/media.mjs";
import { freePort } from "../../scripts/lib/server.mjs";
import { startLinkServer } from "../support/link-server.ts";
import { generateTestMedia } from "../support/media.ts";
import { MEDIA_TOOLS_ENV } from "../support/tools.ts";

export const MEDIA_SECRET = "test-media-secret-0123456789";

/** The real media service (npm's ffmpeg) as a host process, for the Worker under test to call. */
export default async function setup(project: TestProject) {
  await generateTestMedia();
  const media = await startMediaService({ port: await freePort(), secret: MEDIA_SECRET, env: MEDIA_TOOLS_ENV });
  const links = await startLinkServer();
  project.provide("mediaServiceUrl", media.url);
  project.provide("linkServerUrl", links.url);
  return async () => {
    await links.close();
    await media.stop();
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    mediaServiceUrl: string;
    linkServerUrl: string;
  }
}
