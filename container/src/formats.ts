import { open } from "node:fs/promises";
import type { VideoFormat } from "./contract";

/**
 * The format of every input is the one the Worker sniffed from its first bytes (src/media/sniff.ts)
 * and names in the call (contract.ts); nothing here guesses. Left to probe, ffmpeg picks any of
 * its demuxers, and some open other files or URLs named inside the input: an HLS playlist, a
 * concat list, an image sequence pattern. So each format maps to the one demuxer that reads it,
 * given with `-f` before `-i`, and every run may open local files only (the job's own).
 */

/** A demuxer and the options that keep it to the one input file. */
export interface Demuxer {
  name: string;
  options: string[];
}

// QuickTime/MP4 can point at media in other files ("data references"): never followed.
const MOV: Demuxer = { name: "mov", options: ["-enable_drefs", "0", "-use_absolute_path", "0"] };
const only = (name: string): Demuxer => ({ name, options: [] });

export const VIDEO_DEMUXERS: Record<VideoFormat, Demuxer> = {
  mp4: MOV,
  mov: MOV,
  m4v: MOV,
  "3gp": MOV,
  webm: only("matroska"),
  mkv: only("matroska"),
  avi: only("avi"),
  // Decided by the first bytes, as the Worker's sniffing accepted them (see mpegDemuxer).
  mpeg: only("mpeg"),
  wmv: only("asf"),
  flv: only("flv"),
};

/** Still images are decoded by sharp, except BMP (see image.ts). */
export const BMP_DEMUXER = only("bmp_pipe");

/** ffmpeg's and ffprobe's arguments that open `file` with `demuxer` and no other protocol than a local file. */
export const inputArgs = (demuxer: Demuxer, file: string) => [
  "-protocol_whitelist",
  "file,pipe",
  "-f",
  demuxer.name,
  ...demuxer.options,
  "-i",
  file,
];

/** The demuxer for a video `format`, reading the first bytes where one format has several. */
export async function videoDemuxer(format: VideoFormat, file: string): Promise<Demuxer> {
  return format === "mpeg" ? only(mpegDemuxer(await head(file, 4))) : VIDEO_DEMUXERS[format];
}

/** MPEG as the Worker sniffs it: a transport stream (sync byte 0x47), a program stream, or bare video. */
function mpegDemuxer(b: Buffer): string {
  if (b[0] === 0x47) return "mpegts";
  if (b[0] === 0 && b[1] === 0 && b[2] === 1 && b[3] === 0xb3) return "mpegvideo";
  return "mpeg";
}

/** The first `length` bytes of a file (fewer if it is shorter). */
export async function head(file: string, length: number): Promise<Buffer> {
  const handle = await open(file, "r");
  try {
    const bytes = Buffer.alloc(length);
    const { bytesRead } = await handle.read(bytes, 0, length, 0);
    return bytes.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}
