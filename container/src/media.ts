import { stat } from "node:fs/promises";
import type { Probe } from "./contract";
import { inputArgs, type Demuxer } from "./formats";
import { JobError, run, ToolCrashed, type Job } from "./run";

/** A job's input file and the demuxer its declared format allows. */
export interface Source {
  file: string;
  demuxer: Demuxer;
}

/**
 * Videos refused before anything decodes them, on what the probe reads from the headers.
 * 8192 px a side takes 8K (7680 x 4320, DCI 8192 x 4320) and anything a phone or camera
 * records; beyond it a frame is a decoding bomb more likely than a picture. 4 hours is far more
 * than a conversion finishes within the job's time limit; a longer declared duration is a
 * crafted or broken file, whose timestamps could make ffmpeg produce frames without end.
 */
export const MAX_VIDEO_SIDE = 8192;
export const MAX_VIDEO_SECONDS = 4 * 3600;

export interface FfprobeStream {
  codec_type?: string;
  pix_fmt?: string;
  bit_rate?: string;
  avg_frame_rate?: string;
  duration?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  tags?: Record<string, string>;
  side_data_list?: { rotation?: number }[];
}

export const probe = async (job: Job, source: Source): Promise<Probe> => probeOf(await ffprobe(job, source));

function probeOf(data: FfprobeOutput): Probe {
  const video = data.streams?.find((s) => s.codec_type === "video");
  const audio = data.streams?.find((s) => s.codec_type === "audio");
  if (!data.format) throw new JobError(422, "not a media file");
  const matrix = video?.side_data_list?.find((d) => typeof d.rotation === "number")?.rotation;
  const tagged = Number(video?.tags?.rotate ?? 0);
  // A display matrix rotation is counter-clockwise; the legacy rotate tag is clockwise.
  const rotation = (((matrix !== undefined ? -matrix : tagged) % 360) + 360) % 360;
  const sideways = rotation === 90 || rotation === 270;
  const w = video?.width ?? null;
  const h = video?.height ?? null;
  const duration = Number(data.format.duration);
  return {
    container: data.format.format_name ?? "unknown",
    duration: Number.isFinite(duration) ? duration : null,
    videoCodec: video?.codec_name ?? null,
    audioCodec: audio?.codec_name ?? null,
    codedWidth: w,
    codedHeight: h,
    rotation,
    width: sideways ? h : w,
    height: sideways ? w : h,
  };
}

export interface FfprobeOutput {
  format?: { format_name?: string; duration?: string; start_time?: string };
  streams?: FfprobeStream[];
}

async function ffprobe(job: Job, source: Source): Promise<FfprobeOutput> {
  const args = ["-v", "error", "-print_format", "json", "-show_format", "-show_streams"];
  const out = await run(job, "ffprobe", [...args, ...inputArgs(source.demuxer, source.file)]);
  return JSON.parse(out) as FfprobeOutput;
}

/**
 * Refuses (422) a video over the limits above, from its headers, before it is decoded. Answers
 * its longest duration in seconds (null when unknown), which a conversion's progress is measured by.
 */
export async function checkVideo(job: Job, source: Source): Promise<number | null> {
  let data: FfprobeOutput;
  try {
    data = await ffprobe(job, source);
  } catch (error) {
    // The npm-shipped ffprobe (4.1, the local fallback) crashes on every MPEG transport stream:
    // for those only, the conversion goes on without this early refusal (-max_pixels and the
    // job's time limit still hold). Any other crash refuses the file.
    if (error instanceof ToolCrashed && source.demuxer.name === "mpegts") return null;
    if (error instanceof ToolCrashed) throw new JobError(422, `${error.message} reading the file`);
    throw error;
  }
  return withinLimits(data);
}

/**
 * checkVideo and probe in one ffprobe run, with all it read (a ladder's plan needs more of it). A
 * crash of ffprobe refuses the file.
 */
export async function inspectVideo(job: Job, source: Source): Promise<{ probe: Probe; data: FfprobeOutput }> {
  const data = await ffprobe(job, source).catch((error: unknown) => {
    throw error instanceof ToolCrashed ? new JobError(422, `${error.message} reading the file`) : error;
  });
  withinLimits(data);
  return { probe: probeOf(data), data };
}

/** checkVideo's refusals of what ffprobe read; its longest duration (null when unknown). */
function withinLimits(data: FfprobeOutput): number | null {
  if (!data.format) throw new JobError(422, "not a media file");
  for (const stream of data.streams ?? []) {
    if (stream.codec_type !== "video") continue;
    const [w, h] = [stream.width ?? 0, stream.height ?? 0];
    if (w > MAX_VIDEO_SIDE || h > MAX_VIDEO_SIDE)
      throw new JobError(422, `video frames of ${w}x${h} px are over the ${MAX_VIDEO_SIDE} px limit`);
  }
  const durations = [data.format.duration, ...(data.streams ?? []).map((s) => s.duration)]
    .map(Number)
    .filter(Number.isFinite);
  const longest = Math.max(0, ...durations);
  if (longest > MAX_VIDEO_SECONDS) {
    throw new JobError(
      422,
      `a duration of ${(longest / 3600).toFixed(1)} hours is over the ${MAX_VIDEO_SECONDS / 3600} hours limit`,
    );
  }
  return longest || null;
}

/**
 * ffmpeg's -progress, when the job reports progress: key=value lines on stdout every half second,
 * read as the share of `duration` (seconds) written so far; 99 at most until ffmpeg says "end".
 * Without a duration only the end is known.
 */
export function progressOf(job: Job, duration: number | null): { args: string[]; onLine?: (line: string) => void } {
  const report = job.report;
  if (!report) return { args: [] };
  const onLine = (line: string) => {
    const [key, value = ""] = line.split("=", 2);
    if (key === "progress" && value === "end") return report(100);
    const time = key === "out_time" ? /^(\d+):(\d\d):(\d\d(?:\.\d+)?)$/.exec(value) : null;
    if (!time || !duration) return;
    const seconds = Number(time[1]) * 3600 + Number(time[2]) * 60 + Number(time[3]);
    report(Math.min(99, Math.floor((seconds / duration) * 100)));
  };
  return { args: ["-progress", "pipe:1"], onLine };
}

/**
 * Decoder options ahead of the input: no frame over the side limit squared, in case one grows
 * past what the headers said.
 */
export const DECODE_LIMITS = ["-max_pixels", String(MAX_VIDEO_SIDE * MAX_VIDEO_SIDE)];

/**
 * Outputs are bounded too (the temp-space budget counts inputs only): twice the largest input,
 * room for a conversion to a less efficient codec. ffmpeg stops cleanly at the limit, so an output
 * that reached it is cut short and refused rather than served.
 */
const outputBytes = (job: Job) => 2 * job.config.maxInputBytes;
const outputLimit = (job: Job) => ["-fs", String(outputBytes(job))];

async function refuseIfCut(job: Job, output: string): Promise<void> {
  const { size } = await stat(output);
  if (size >= outputBytes(job)) throw new JobError(422, `the output reached the ${outputBytes(job)}-byte limit`);
}

/** ffmpeg reading the source's first video stream, within the decode limits. */
const firstVideoOf = (source: Source) => [
  "-nostdin",
  "-y",
  ...DECODE_LIMITS,
  ...inputArgs(source.demuxer, source.file),
  "-map",
  "0:v:0",
];

/**
 * H.264 as every video the service makes is encoded: the MP4 and each rung of a ladder alike, so
 * that a rung the size of the MP4 looks as it does.
 */
export const WEB_H264 = ["-c:v", "libx264", "-preset", "veryfast", "-crf", "23"];

export const NO_METADATA = ["-map_metadata", "-1", "-map_chapters", "-1", "-fflags", "+bitexact"];

/**
 * H.264 + AAC in MP4 for the web: rotation applied to the pixels (ffmpeg autorotates while
 * decoding), even dimensions (yuv420p needs them), metadata dropped, index at the front.
 */
export async function transcodeMp4(job: Job, source: Source, output: string, duration: number | null): Promise<void> {
  const progress = progressOf(job, duration);
  await run(
    job,
    "ffmpeg",
    [
      ...progress.args,
      ...firstVideoOf(source),
      "-map",
      "0:a:0?",
      ...WEB_H264,
      "-pix_fmt",
      "yuv420p",
      "-vf",
      "scale=trunc(iw/2)*2:trunc(ih/2)*2",
      "-c:a",
      "aac",
      "-b:a",
      "128k",
      ...NO_METADATA,
      "-movflags",
      "+faststart",
      ...outputLimit(job),
      "-f",
      "mp4",
      output,
    ],
    progress.onLine,
  );
  await refuseIfCut(job, output);
}

/** The same streams without metadata (location, device, dates), not re-encoded. */
export async function stripMetadata(
  job: Job,
  source: Source,
  output: string,
  format: "mp4" | "webm",
  duration: number | null,
): Promise<void> {
  const progress = progressOf(job, duration);
  await run(
    job,
    "ffmpeg",
    [
      ...progress.args,
      "-nostdin",
      "-y",
      ...inputArgs(source.demuxer, source.file),
      "-map",
      "0:v?",
      "-map",
      "0:a?",
      "-c",
      "copy",
      ...NO_METADATA,
      ...(format === "mp4" ? ["-movflags", "+faststart"] : []),
      ...outputLimit(job),
      "-f",
      format,
      output,
    ],
    progress.onLine,
  );
  await refuseIfCut(job, output);
}

/** ffmpeg reading the source's first frame, upright (ffmpeg autorotates), `width` px wide at most. */
const firstFrameOf = (source: Source, width: number) => [...firstVideoOf(source), "-frames:v", "1", ...scaledTo(width)];
const scaledTo = (width: number) => ["-vf", `scale='min(${width},iw)':-2`];

/** The first frame, upright, as a WebP `width` pixels wide (never upscaled). */
export async function thumbnail(job: Job, source: Source, output: string, width: number): Promise<void> {
  await run(job, "ffmpeg", [
    ...firstFrameOf(source, width),
    "-c:v",
    "libwebp",
    "-quality",
    "80",
    ...NO_METADATA,
    ...outputLimit(job),
    "-f",
    "webp",
    output,
  ]);
}

/**
 * The frame at `at` seconds (the first without), upright, as an 8-bit RGB PNG `width` pixels wide
 * at most, for sharp to encode as a poster: lossless, so that the poster is encoded once only.
 * The seek is ffmpeg's fast one (before the input: to the keyframe before, then decoded up to
 * the time). A time at or past the end gives the last frame rather than nothing.
 */
export async function framePng(job: Job, source: Source, output: string, width: number, at?: number): Promise<void> {
  const png = ["-pix_fmt", "rgb24", "-c:v", "png", ...NO_METADATA, ...outputLimit(job), "-f", "image2"];
  const seek = at ? ["-ss", String(at)] : [];
  await run(job, "ffmpeg", [...seek, ...firstFrameOf(source, width), ...png, output]);
  if (!at || (await stat(output).catch(() => null))?.size) return;
  // Nothing at that time: the last second decoded, each frame written over the one before.
  await run(job, "ffmpeg", [
    "-sseof",
    "-1",
    ...firstVideoOf(source),
    ...scaledTo(width),
    ...png,
    "-update",
    "1",
    output,
  ]);
  if (!(await stat(output).catch(() => null))?.size) throw new JobError(422, "no frame of the video decodes");
}
