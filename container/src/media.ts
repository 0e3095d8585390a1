import type { Config } from "./config";
import { JobError, run } from "./run";

export interface Probe {
  container: string;
  duration: number | null;
  videoCodec: string | null;
  audioCodec: string | null;
  /** Stored frame size. */
  codedWidth: number | null;
  codedHeight: number | null;
  /** Degrees clockwise the frame must be turned to display upright. */
  rotation: number;
  /** Upright display size. */
  width: number | null;
  height: number | null;
}

interface FfprobeStream {
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  tags?: Record<string, string>;
  side_data_list?: { rotation?: number }[];
}

export async function probe(config: Config, input: string): Promise<Probe> {
  const out = await run(
    config.ffprobe,
    ["-v", "error", "-print_format", "json", "-show_format", "-show_streams", input],
    config.jobTimeoutMs,
  );
  const data = JSON.parse(out) as { format?: { format_name?: string; duration?: string }; streams?: FfprobeStream[] };
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

const NO_METADATA = ["-map_metadata", "-1", "-map_chapters", "-1", "-fflags", "+bitexact"];

/**
 * H.264 + AAC in MP4 for the web: rotation applied to the pixels (ffmpeg autorotates while
 * decoding), even dimensions (yuv420p needs them), metadata dropped, index at the front.
 */
export async function transcodeMp4(config: Config, input: string, output: string): Promise<void> {
  await run(
    config.ffmpeg,
    [
      "-nostdin", "-y", "-i", input,
      "-map", "0:v:0", "-map", "0:a:0?",
      "-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p",
      "-vf", "scale=trunc(iw/2)*2:trunc(ih/2)*2",
      "-c:a", "aac", "-b:a", "128k",
      ...NO_METADATA,
      "-movflags", "+faststart",
      "-f", "mp4", output,
    ],
    config.jobTimeoutMs,
  );
}

/** The same streams without metadata (location, device, dates), not re-encoded. */
export async function stripMetadata(config: Config, input: string, output: string, format: "mp4" | "webm"): Promise<void> {
  await run(
    config.ffmpeg,
    [
      "-nostdin", "-y", "-i", input,
      "-map", "0:v?", "-map", "0:a?", "-c", "copy",
      ...NO_METADATA,
      ...(format === "mp4" ? ["-movflags", "+faststart"] : []),
      "-f", format, output,
    ],
    config.jobTimeoutMs,
  );
}

/** The first frame, upright, as a WebP `width` pixels wide (never upscaled). */
export async function thumbnail(config: Config, input: string, output: string, width: number): Promise<void> {
  await run(
    config.ffmpeg,
    [
      "-nostdin", "-y", "-i", input,
      "-map", "0:v:0", "-frames:v", "1",
      "-vf", `scale='min(${width},iw)':-2`,
      "-c:v", "libwebp", "-quality", "80",
      ...NO_METADATA,
      "-f", "webp", output,
    ],
    config.jobTimeoutMs,
  );
}
