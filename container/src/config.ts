import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import os from "node:os";

const require = createRequire(import.meta.url);

/**
 * The one named by the environment, else the system's when there is one (current, with the
 * distribution's codecs), otherwise the static build that the npm registry ships, so `npm run dev`
 * works on a machine with only Node.
 */
function binary(name: "ffmpeg" | "ffprobe", env: string | undefined, npmPackage: string): string {
  if (env) return env;
  try {
    execFileSync(name, ["-version"], { stdio: "ignore" });
    return name;
  } catch {
    try {
      return (require(npmPackage) as { path: string }).path;
    } catch {
      throw new Error(`${name} not found: install it (apt-get install ffmpeg) or the npm package ${npmPackage}`);
    }
  }
}

/** The video tools this machine gives the service: FFMPEG_PATH/FFPROBE_PATH, the system's, or npm's. */
export function mediaTools(env: NodeJS.ProcessEnv = process.env) {
  return {
    ffmpeg: binary("ffmpeg", env.FFMPEG_PATH, "@ffmpeg-installer/ffmpeg"),
    ffprobe: binary("ffprobe", env.FFPROBE_PATH, "@ffprobe-installer/ffprobe"),
  };
}

export interface Config {
  port: number;
  host: string;
  secret: string;
  ffmpeg: string;
  ffprobe: string;
  tmpDir: string;
  jobTimeoutMs: number;
  maxConcurrentJobs: number;
  maxQueuedJobs: number;
  maxInputBytes: number;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const secret = env.MEDIA_SECRET ?? "";
  if (secret.length < 16) throw new Error("MEDIA_SECRET must be set to at least 16 characters");
  return {
    port: Number(env.PORT ?? 8080),
    host: env.HOST ?? "0.0.0.0",
    secret,
    ...mediaTools(env),
    tmpDir: env.MEDIA_TMP_DIR ?? os.tmpdir(),
    jobTimeoutMs: Number(env.JOB_TIMEOUT_MS ?? 15 * 60_000),
    maxConcurrentJobs: Number(env.MAX_CONCURRENT_JOBS ?? 2),
    maxQueuedJobs: Number(env.MAX_QUEUED_JOBS ?? 8),
    maxInputBytes: Number(env.MAX_INPUT_BYTES ?? 210 * 1024 * 1024),
  };
}
