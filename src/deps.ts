import type { Env } from "./env";
import { mediaService } from "./media/service";
import type { Database } from "./storage/db";
import { database } from "./storage/db";
import type { UploadDeps } from "./uploads/deps";
import type { ProcessDeps } from "./uploads/process";

/** Where the domain's dependencies are built from the Worker's bindings, for routes and cron alike. */
export function uploadDeps(env: Env, db: Database = database(env.DB), now: () => number = Date.now): UploadDeps {
  return { db, bucket: env.FILES, now };
}

export function processDeps(env: Env, db?: Database, now?: () => number): ProcessDeps {
  const retrySeconds = Number(env.MEDIA_RETRY_SECONDS);
  return {
    ...uploadDeps(env, db, now),
    media: mediaService(env),
    retryBaseMs: Number.isFinite(retrySeconds) && retrySeconds > 0 ? retrySeconds * 1000 : 60_000,
  };
}
