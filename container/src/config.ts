import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import os from "node:os";
import { MEDIA_PORT, type ServiceVars } from "./contract";

const require = createRequire(import.meta.url);

/** The environment, or a test's stand-in for it. */
type Variables = Record<string, string | undefined>;

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
export function mediaTools(env: Variables = process.env) {
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
  /** Job inputs on the temporary disk, all jobs together (outputs come on top). */
  maxTempBytes: number;
}

export function loadConfig(env: Variables = process.env): Config {
  const given: Partial<ServiceVars> = env;
  const secret = given.MEDIA_SECRET ?? "";
  if (secret.length < 16) throw new Error("MEDIA_SECRET must be set to at least 16 characters");
  const maxConcurrentJobs = Number(given.MAX_CONCURRENT_JOBS ?? 2);
  const maxInputBytes = Number(env.MAX_INPUT_BYTES ?? 210 * 1024 * 1024);
  const config: Config = {
    port: Number(given.PORT ?? MEDIA_PORT),
    host: env.HOST ?? "0.0.0.0",
    secret,
    ...mediaTools(env),
    tmpDir: env.MEDIA_TMP_DIR ?? os.tmpdir(),
    jobTimeoutMs: Number(given.JOB_TIMEOUT_MS ?? 15 * 60_000),
    maxConcurrentJobs,
    maxQueuedJobs: Number(given.MAX_QUEUED_JOBS ?? 8),
    maxInputBytes,
    // Inputs of the largest size for every running job and two waiting (840 MiB by default), or
    // more smaller ones; the running jobs' outputs need about as much again at most.
    maxTempBytes: Number(env.MAX_TEMP_BYTES ?? (maxConcurrentJobs + 2) * maxInputBytes),
  };
  // Otherwise an input of the largest size could never be taken.
  if (!(config.maxTempBytes >= config.maxInputBytes))
    throw new Error("MAX_TEMP_BYTES must be at least MAX_INPUT_BYTES");
  return config;
}
