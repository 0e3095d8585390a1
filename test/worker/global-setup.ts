import type { TestProject } from "vitest/node";
import { startMediaService } from "../../scripts/lib/media.mjs";
import { freePort } from "../../scripts/lib/server.mjs";
import { generateTestMedia } from "../support/media";

export const MEDIA_SECRET = "test-media-secret-0123456789";

/** The real media service (ffmpeg) as a host process, for the Worker under test to call. */
export default async function setup(project: TestProject) {
  generateTestMedia();
  const media = await startMediaService({ port: await freePort(), secret: MEDIA_SECRET });
  project.provide("mediaServiceUrl", media.url);
  return () => media.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    mediaServiceUrl: string;
  }
}
