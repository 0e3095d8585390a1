import { processDeps } from "./deps";
import type { Env } from "./env";
import { redriveMediaJobs } from "./uploads/process";

/** Every few minutes: re-drive media jobs that failed, crashed or never ran. */
export async function scheduled(env: Env, now: () => number = Date.now): Promise<void> {
  await redriveMediaJobs(processDeps(env, undefined, now));
}
