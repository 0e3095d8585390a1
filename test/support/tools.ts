import { execFile, execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { promisify } from "node:util";

/**
 * The static ffmpeg and ffprobe builds that npm ships: tests need nothing but Node and npm,
 * both to make and read test media and for the media service under test.
 */
const require = createRequire(import.meta.url);
export const FFMPEG: string = require("@ffmpeg-installer/ffmpeg").path;
export const FFPROBE: string = require("@ffprobe-installer/ffprobe").path;

/** Environment for startMediaService, so that the service runs these same binaries. */
export const MEDIA_TOOLS_ENV = { FFMPEG_PATH: FFMPEG, FFPROBE_PATH: FFPROBE };

/**
 * Runs ffmpeg quietly; the output file is the last argument. It never blocks the event loop: an
 * encode of seconds that blocked it would let a server close an idle kept-alive connection
 * unseen, and the test's next request would go out on the closed socket (ECONNRESET).
 */
export async function ffmpeg(args: string[]) {
  await promisify(execFile)(FFMPEG, ["-v", "error", "-y", ...args], { maxBuffer: 16 * 1024 * 1024 });
}

/** What ffprobe prints, e.g. `ffprobe(["-show_entries", "stream=width,height", "-of", "csv=p=0", file])`. */
export function ffprobe(args: string[]): string {
  return execFileSync(FFPROBE, ["-v", "error", ...args], { encoding: "utf8" });
}
