import { stat } from "node:fs/promises";
import path from "node:path";
import { SEGMENT_SECONDS, STORYBOARD_COLUMNS } from "./ladder-contract";
import type { LadderPlan } from "./ladder-plan";
import { inputArgs } from "./formats";
import { DECODE_LIMITS, NO_METADATA, progressOf, WEB_H264, type Source } from "./media";
import { JobError, run, type Job } from "./run";

/**
 * The ONE ffmpeg run that makes a ladder: the source decoded once, split to every encoded rung's
 * size and to the storyboard's tiles; each rung a fragmented MP4 (a fragment at each keyframe),
 * keyframes forced at the same times on every rung so that their segments line up.
 */
export interface LadderRun {
  args: string[];
  /** Each rung's media file (in the plan's order; "audio.mp4" alone for an audio-only source). */
  media: string[];
  storyboard: string | null;
}

const FRAGMENTED = ["-f", "mp4", "-movflags", "+frag_keyframe+empty_moov+default_base_moof"];

/**
 * ffmpeg's arguments for `plan` (exported so that the bench runs the same ones bare), every output
 * in `dir` and at most `maxBytes` long.
 */
export function ladderArgs(plan: LadderPlan, source: Source, dir: string, maxBytes: number): LadderRun {
  const limit = ["-fs", String(maxBytes)];
  const input = ["-nostdin", "-y", ...DECODE_LIMITS, ...inputArgs(source.demuxer, source.file)];
  const aac = ["-c:a", "aac", "-b:a", `${plan.audioKbps}k`];
  const audio = plan.audio ? ["-map", "0:a:0", ...(plan.audio === "copy" ? ["-c:a", "copy"] : aac)] : [];
  if (plan.rungs.length === 0) {
    // Audio alone: fragments of about a segment each (every audio frame is a keyframe).
    const media = path.join(dir, "audio.mp4");
    const fragments = ["-frag_duration", String(SEGMENT_SECONDS * 1e6), "-movflags", "+empty_moov+default_base_moof"];
    return {
      args: [...input, "-vn", ...audio, ...NO_METADATA, ...limit, "-f", "mp4", ...fragments, media],
      media: [media],
      storyboard: null,
    };
  }
  const encoded = plan.rungs.filter((r) => !r.copy);
  const board = plan.storyboard;
  const branches = encoded.length + (board ? 1 : 0);
  const graph = [`[0:v:0]split=${branches}${Array.from({ length: branches }, (_, i) => `[s${i}]`).join("")}`];
  for (const [i, r] of encoded.entries())
    graph.push(`[s${i}]scale=${r.width}:${r.height},setsar=1,format=yuv420p[v${i}]`);
  if (board) {
    const tile = `tile=${STORYBOARD_COLUMNS}x${board.rows}`;
    graph.push(`[s${encoded.length}]fps=1/${board.interval},scale=${board.tileWidth}:${board.tileHeight},${tile}[sb]`);
  }
  const keyframes = plan.cuts ? plan.cuts.join(",") : `expr:gte(t,n_forced*${SEGMENT_SECONDS})`;
  const outputs: string[] = [];
  const media: string[] = [];
  for (const rung of plan.rungs) {
    const file = path.join(dir, `${rung.name}.mp4`);
    media.push(file);
    const video = rung.copy
      ? ["-map", "0:v:0", "-c:v", "copy"]
      : ["-map", `[v${encoded.indexOf(rung)}]`, ...x264(rung.maxKbps, keyframes)];
    outputs.push(...video, ...audio, ...NO_METADATA, ...limit, ...FRAGMENTED, file);
  }
  const storyboard = board ? path.join(dir, "storyboard.webp") : null;
  if (storyboard) {
    const webp = ["-c:v", "libwebp", "-quality", "60", "-f", "webp"];
    outputs.push("-map", "[sb]", "-frames:v", "1", ...webp, ...NO_METADATA, ...limit, storyboard);
  }
  return { args: [...input, "-filter_complex", graph.join(";"), ...outputs], media, storyboard };
}

/**
 * H.264 at CRF 23 within the rung's -maxrate (a buffer of two seconds' worth), keyframes only
 * where forced: no scene-cut keyframes, a GOP longer than any segment.
 */
const x264 = (kbps: number, keyframes: string) => [
  ...WEB_H264,
  "-maxrate",
  `${kbps}k`,
  "-bufsize",
  `${2 * kbps}k`,
  "-force_key_frames",
  keyframes,
  "-forced-idr",
  "1",
  "-sc_threshold",
  "0",
  "-g",
  "100000",
];

/**
 * Runs the ladder's ffmpeg, its progress reported as the share of the duration done. Its outputs
 * together may not pass `maxBytes`: each -fs bounds one output only, so their sizes are added up
 * at each of ffmpeg's progress reports (every half second), and the run stopped (422) once over,
 * before the rungs fill the temporary disk.
 */
export async function encodeLadder(job: Job, ladder: LadderRun, duration: number, maxBytes: number): Promise<void> {
  const progress = progressOf(job, duration);
  const over = new AbortController();
  const watched = { ...job, signal: AbortSignal.any([job.signal, over.signal]) };
  const outputs = [...ladder.media, ...(ladder.storyboard ? [ladder.storyboard] : [])];
  let measuring = false;
  const onLine = (line: string) => {
    progress.onLine?.(line);
    if (!line.startsWith("progress=") || measuring) return;
    measuring = true;
    void bytesOf(outputs)
      .then((bytes) => bytes > maxBytes && over.abort())
      .finally(() => (measuring = false));
  };
  try {
    await run(watched, "ffmpeg", ["-progress", "pipe:1", ...ladder.args], onLine);
  } catch (error) {
    if (over.signal.aborted && !job.signal.aborted)
      throw new JobError(422, `the ladder's files went over the ${maxBytes} bytes allowed`);
    throw error;
  }
}

async function bytesOf(files: string[]): Promise<number> {
  const sizes = await Promise.all(
    files.map((file) =>
      stat(file).then(
        (s) => s.size,
        () => 0,
      ),
    ),
  );
  return sizes.reduce((sum, size) => sum + size, 0);
}
