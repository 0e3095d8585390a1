import type { Probe } from "./contract";
import {
  AUDIO_KBPS,
  LADDER_RUNGS,
  SEGMENT_SECONDS,
  STORYBOARD_COLUMNS,
  STORYBOARD_MAX_TILES,
  STORYBOARD_TILE_WIDTH,
} from "./ladder-contract";
import { MAX_VIDEO_SECONDS, type FfprobeOutput, type FfprobeStream, type Source } from "./media";
import { inputArgs } from "./formats";
import { JobError, run, type Job } from "./run";

/**
 * What a ladder is made of before ffmpeg runs: its rungs (sizes and bitrate caps), whether the
 * top rung is copied from the source, the times every rung's segments start at when it is, and
 * the storyboard's grid.
 */
export interface PlannedRung {
  name: string;
  width: number;
  height: number;
  /** The -maxrate of its encode, in kbit/s: the rung's cap, never more than the source's own video rate. */
  maxKbps: number;
  /** Copied from the source rather than encoded. */
  copy: boolean;
}

export interface StoryboardPlan {
  interval: number;
  tiles: number;
  rows: number;
  tileWidth: number;
  tileHeight: number;
}

export interface LadderPlan {
  duration: number;
  /** Empty for an audio-only source. */
  rungs: PlannedRung[];
  /** "copy" when the source's audio is AAC already; null without audio. */
  audio: "copy" | "aac" | null;
  /** An encoded AAC's rate (kbit/s): AUDIO_KBPS, or the source's own audio rate when lower (64 at least). */
  audioKbps: number;
  /** With a copied rung: the source's keyframe times every rung's segments start at. */
  cuts: number[] | null;
  storyboard: StoryboardPlan | null;
  /** Frames a second, for the alignment check's tolerance (one frame). */
  fps: number;
}

/** A segment the copied rung would make may last this long at most; longer, every rung is encoded. */
export const MAX_COPIED_SEGMENT_SECONDS = 6;
const TOP_SHORT_SIDE = 1080;
/** AAC below this would be worse than the source's audio deserves, whatever its rate. */
const MIN_AUDIO_KBPS = 64;

interface StreamDetails {
  pixFmt: string | null;
  kbps: number | null;
  audioKbps: number | null;
  fps: number;
  start: number;
}

/** The plan for `source`, as inspectVideo read it; with `copyAllowed` false, every rung encoded. */
export async function planLadder(
  job: Job,
  source: Source,
  { probe, data }: { probe: Probe; data: FfprobeOutput },
  copyAllowed = true,
): Promise<LadderPlan> {
  const details = detailsOf(data);
  const duration = probe.duration && probe.duration > 0 ? probe.duration : await packetSpan(job, source, details);
  if (!duration) throw new JobError(422, "the video's duration is unknown");
  if (duration > MAX_VIDEO_SECONDS) throw new JobError(422, `a duration of ${duration} s is over the limit`);
  const audio = probe.audioCodec === null ? null : probe.audioCodec === "aac" ? "copy" : "aac";
  const audioKbps = Math.max(MIN_AUDIO_KBPS, Math.min(AUDIO_KBPS, details.audioKbps ?? AUDIO_KBPS));
  if (!probe.videoCodec || !probe.width || !probe.height) {
    if (!audio) throw new JobError(422, "neither video nor audio to make a ladder of");
    return { duration, rungs: [], audio, audioKbps, cuts: null, storyboard: null, fps: 1 };
  }
  const rungs = rungSizes(probe.width, probe.height).map(({ name, width, height, kbps }) => ({
    name,
    width,
    height,
    maxKbps: details.kbps ? Math.min(kbps, details.kbps) : kbps,
    copy: false,
  }));
  const top = rungs[0];
  const copyable =
    top !== undefined &&
    copyAllowed &&
    probe.videoCodec === "h264" &&
    details.pixFmt === "yuv420p" &&
    probe.rotation === 0 &&
    top.width === probe.codedWidth &&
    top.height === probe.codedHeight;
  const cuts = copyable ? cutsAt(await keyframeTimes(job, source, details.start), duration) : null;
  if (cuts && top) top.copy = true;
  return {
    duration,
    rungs,
    audio,
    audioKbps,
    cuts,
    storyboard: storyboardOf(duration, probe.width, probe.height),
    fps: details.fps,
  };
}

/**
 * The rungs of LADDER_RUNGS below the source's short side, under a top rung at the source's own
 * size (capped at 1080p, named by its short side, with the cap of the smallest rung at least as
 * tall). Even sides, the frame's shape kept; never upscaled.
 */
export function rungSizes(width: number, height: number) {
  const short = Math.min(width, height);
  const sized = (side: number) => {
    const scale = side / short;
    const even = (n: number) => Math.max(2, Math.round((n * scale) / 2) * 2);
    return { width: even(width), height: even(height) };
  };
  const topSide = Math.min(short, TOP_SHORT_SIDE);
  const topCap = [...LADDER_RUNGS].reverse().find((r) => r.shortSide >= topSide) ?? LADDER_RUNGS[0];
  const top = {
    name: `${topSide - (topSide % 2)}p`,
    kbps: topCap.maxVideoKbps,
    ...(topSide === short ? { width: width - (width % 2), height: height - (height % 2) } : sized(topSide)),
  };
  const below = LADDER_RUNGS.filter((r) => r.shortSide < topSide).map((r) => ({
    name: r.name,
    kbps: r.maxVideoKbps,
    ...sized(r.shortSide),
  }));
  return [top, ...below];
}

/**
 * Greedy cuts at the first keyframe SEGMENT_SECONDS or more after the previous cut: the copied
 * rung's segments. Null when a segment would last over MAX_COPIED_SEGMENT_SECONDS.
 */
export function cutsAt(keyframes: number[], duration: number): number[] | null {
  // The first keyframe opens the video (a frame's delay at most, for B-frames).
  if (!(keyframes.length > 0 && (keyframes[0] ?? 1) <= 0.1)) return null;
  const cuts = [0];
  let last = 0;
  for (const time of keyframes) {
    if (time - last < SEGMENT_SECONDS) continue;
    cuts.push(time);
    last = time;
  }
  const ends = [...cuts.slice(1), duration];
  return ends.every((end, i) => end - (cuts[i] ?? 0) <= MAX_COPIED_SEGMENT_SECONDS) ? cuts : null;
}

/** The source video's keyframe times from its packets (no decoding), from its start, in order. */
async function keyframeTimes(job: Job, source: Source, start: number): Promise<number[]> {
  const times: number[] = [];
  const args = ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags", "-of", "csv=p=0"];
  await run(job, "ffprobe", [...args, ...inputArgs(source.demuxer, source.file)], (line) => {
    const [time, flags = ""] = line.split(",");
    if (flags.includes("K") && time !== "N/A") times.push(Math.round((Number(time) - start) * 1e6) / 1e6);
  });
  return times.sort((a, b) => a - b);
}

/**
 * The length of a file whose header states none (a WebM a browser recorded), from its packets'
 * times, read without decoding: the latest packet's end (its own duration, or a frame's when it
 * states none). 0 when no packet has a time.
 */
async function packetSpan(job: Job, source: Source, details: StreamDetails): Promise<number> {
  let end = 0;
  const args = ["-v", "error", "-show_entries", "packet=pts_time,duration_time", "-of", "csv=p=0"];
  await run(job, "ffprobe", [...args, ...inputArgs(source.demuxer, source.file)], (line) => {
    const [time = "", length = ""] = line.split(",");
    const at = Number(time);
    if (time === "N/A" || !Number.isFinite(at)) return;
    const lasts = Number(length);
    end = Math.max(end, at - details.start + (length !== "N/A" && lasts > 0 ? lasts : 1 / details.fps));
  });
  return Math.round(end * 1e6) / 1e6;
}

/** What the probe does not say: the first video stream's pixel format, rates and start; the first audio's rate. */
function detailsOf(data: FfprobeOutput): StreamDetails {
  const video = data.streams?.find((s) => s.codec_type === "video");
  const audio = data.streams?.find((s) => s.codec_type === "audio");
  const [num = 0, den = 0] = (video?.avg_frame_rate ?? "").split("/").map(Number);
  const kbps = (stream?: FfprobeStream) => {
    const rate = Math.floor(Number(stream?.bit_rate) / 1000);
    return rate > 0 ? rate : null;
  };
  const start = Number(data.format?.start_time);
  return {
    pixFmt: video?.pix_fmt ?? null,
    kbps: kbps(video),
    audioKbps: kbps(audio),
    fps: num > 0 && den > 0 ? num / den : 30,
    start: Number.isFinite(start) ? start : 0,
  };
}

/** A tile every max(1 s, duration/100), 160 px wide, in rows of ten. */
function storyboardOf(duration: number, width: number, height: number): StoryboardPlan {
  const interval = Math.max(1, duration / STORYBOARD_MAX_TILES);
  const tiles = Math.min(STORYBOARD_MAX_TILES, Math.max(1, Math.ceil(duration / interval - 1e-6)));
  const tileHeight = Math.max(2, Math.round((STORYBOARD_TILE_WIDTH * height) / width / 2) * 2);
  return {
    interval,
    tiles,
    rows: Math.ceil(tiles / STORYBOARD_COLUMNS),
    tileWidth: STORYBOARD_TILE_WIDTH,
    tileHeight,
  };
}
