import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { FFMPEG, ffmpeg } from "../support/tools";

/**
 * The player's tests' video (test/node/video-player.test.ts): a generated clip, and the source's
 * frames to compare what the browser shows with.
 */

export const CLIP_SECONDS = 8;
const FPS = 25;

/** The test card with a tone, as H.264 + AAC. */
export async function makeClip(dir: string, name = "clip.mp4") {
  const file = path.join(dir, name);
  await ffmpeg([
    ...["-f", "lavfi", "-i", `testsrc2=size=640x360:rate=${FPS}:duration=${CLIP_SECONDS}`],
    ...["-f", "lavfi", "-i", `sine=frequency=440:duration=${CLIP_SECONDS}`],
    // testsrc2 looks much the same every 2 s once scaled down: a hue turning once over the clip
    // makes every moment's colours its own.
    ...["-vf", `hue=H=2*PI*t/${CLIP_SECONDS}`],
    ...["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest"],
    ...["-movflags", "+faststart", file],
  ]);
  return file;
}

/** Each of `source`'s frames from `from` to `to` seconds, with its time, scaled to width x height, as RGBA bytes. */
export async function framesBetween(source: string, from: number, to: number, width: number, height: number) {
  const args = ["-v", "error", "-ss", String(from), "-i", source, "-t", String(to - from)];
  const { stdout } = await promisify(execFile)(
    FFMPEG,
    [...args, "-vf", `scale=${width}:${height}:in_color_matrix=bt709`, "-f", "rawvideo", "-pix_fmt", "rgba", "-"],
    { encoding: "buffer", maxBuffer: 64 * 1024 * 1024 },
  );
  const size = width * height * 4;
  return Array.from({ length: Math.floor(stdout.length / size) }, (_, i) => ({
    time: from + i / FPS,
    rgba: new Uint8Array(stdout.subarray(i * size, (i + 1) * size)),
  }));
}

/** The mean absolute difference of two RGBA images' colour channels (0-255). */
export function meanDifference(a: ArrayLike<number>, b: ArrayLike<number>) {
  let sum = 0;
  let count = 0;
  for (let i = 0; i < a.length; i++) {
    if (i % 4 === 3) continue;
    sum += Math.abs(a[i]! - b[i]!);
    count++;
  }
  return sum / count;
}
