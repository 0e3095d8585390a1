/**
 * The service as `wrangler dev` runs it, with a way to give an upload a ladder made outside it:
 * for the player's tests in Chromium (test/node/video-player.test.ts), which make a real ladder
 * with npm's ffmpeg and serve it through the real HLS routes and page.
 *
 * `PUT /__ladder/{id}/{name}` stores one of the ladder's files beside the upload's current file
 * (ladderKey); `POST /__ladder/{id}` with `{ladder, duration}` writes the row's ladder and duration.
 */
import service from "../../src/entry/index";
import type { Env } from "../../src/env";
import type { StoredLadder } from "../../src/model/ladder";
import { ladderKey } from "../../src/storage/keys";

export { MediaContainer, MediaJobWorkflow, RateLimiter, VariantLocks } from "../../src/entry/index";

async function seed(request: Request, env: Env, id: string, name: string | undefined) {
  const row = await env.DB.prepare("SELECT object_key FROM uploads WHERE id = ?")
    .bind(id)
    .first<{ object_key: string }>();
  if (!row) return new Response("no such upload", { status: 404 });
  if (name) {
    await env.FILES.put(ladderKey(row.object_key, name), await request.arrayBuffer());
    return new Response(null, { status: 204 });
  }
  const { ladder, duration } = (await request.json()) as { ladder: StoredLadder; duration: number };
  await env.DB.prepare("UPDATE uploads SET ladder = ?, duration = ? WHERE id = ?")
    .bind(JSON.stringify(ladder), duration, id)
    .run();
  return new Response(null, { status: 204 });
}

export default {
  fetch(request, env, ctx) {
    const path = /^\/__ladder\/([^/]+)(?:\/([^/]+))?$/.exec(new URL(request.url).pathname);
    if (path && (request.method === "PUT" || request.method === "POST")) return seed(request, env, path[1]!, path[2]);
    return service.fetch(request, env, ctx);
  },
  scheduled: service.scheduled,
  queue: service.queue,
} satisfies ExportedHandler<Env>;
