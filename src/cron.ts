import type { Env } from "./env";
import { mediaService } from "./media/service";
import { database } from "./storage/db";
import { redriveMediaJobs } from "./uploads/process";

/** Every few minutes: re-drive media jobs that failed, crashed or never ran. */
export async function scheduled(env: Env, now: () => number = Date.now): Promise<void> {
  const deps = { db: database(env.DB), bucket: env.FILES, now, media: mediaService(env) };
  await redriveMediaJobs(deps);
}
