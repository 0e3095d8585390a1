import type { TestProject } from "vitest/node";
import { startMediaService } from "../../scripts/lib/media.mjs";
import { freePort } from "../../scripts/lib/server.mjs";
import { startLinkServer } from "../support/link-server.ts";
import { startMediaHold } from "../support/media-hold.ts";
import { startWebhookReceiver } from "../support/webhook-receiver.ts";
import { generateTestMedia } from "../support/media.ts";
import { MEDIA_TOOLS_ENV } from "../support/tools.ts";

export const MEDIA_SECRET = "test-media-secret-0123456789";

/**
 * The real media service (npm's ffmpeg) as a host process, for the Worker under test to call,
 * behind a pass-through that can hold a conversion's answer (test/support/media-hold.ts); the
 * link uploads' web server, and a webhook receiver.
 */
export default async function setup(project: TestProject) {
  await generateTestMedia();
  const media = await startMediaService({ port: await freePort(), secret: MEDIA_SECRET, env: MEDIA_TOOLS_ENV });
  const hold = await startMediaHold(media.url);
  const links = await startLinkServer();
  const receiver = await startWebhookReceiver();
  project.provide("mediaServiceUrl", hold.url);
  project.provide("linkServerUrl", links.url);
  project.provide("webhookReceiverUrl", receiver.url);
  return async () => {
    await receiver.close();
    await links.close();
    await hold.close();
    await media.stop();
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    mediaServiceUrl: string;
    linkServerUrl: string;
    webhookReceiverUrl: string;
  }
}
