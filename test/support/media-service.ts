import { afterAll, beforeAll } from "vitest";
import { startMediaService } from "../../scripts/lib/media.mjs";
import { freePort } from "../../scripts/lib/server.mjs";
import { MEDIA_TOOLS_ENV } from "./tools";

/** What the media service answered one call with, read whole. */
export interface JobAnswer {
  status: number;
  type: string | null;
  bytes: Uint8Array;
  /** The output's size, from the answer's X-Media-Width and X-Media-Height. */
  size: { width: number; height: number };
  /** The reason of an error answer. */
  error?: string;
  /** A ladder's X-Media-Manifest-Length (0 on other answers). */
  manifestLength: number;
}

/**
 * The media service, started once for a test file (the npm-shipped tools), and `job`, which
 * calls one of its operations (`route`: path and query) with `body` as the Worker would.
 */
export function mediaServiceForTests(secret: string) {
  let media: Awaited<ReturnType<typeof startMediaService>>;
  beforeAll(async () => {
    media = await startMediaService({ port: await freePort(), secret, env: MEDIA_TOOLS_ENV });
  });
  afterAll(() => media?.stop());

  async function job(route: string, body: Uint8Array): Promise<JobAnswer> {
    const res = await fetch(`${media.url}${route}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${secret}` },
      body,
    });
    const bytes = new Uint8Array(await res.arrayBuffer());
    const size = { width: Number(res.headers.get("X-Media-Width")), height: Number(res.headers.get("X-Media-Height")) };
    const error = res.ok ? undefined : (JSON.parse(new TextDecoder().decode(bytes)) as { error: string }).error;
    const manifestLength = Number(res.headers.get("X-Media-Manifest-Length") ?? 0);
    return { status: res.status, type: res.headers.get("Content-Type"), bytes, size, error, manifestLength };
  }
  return { job };
}
