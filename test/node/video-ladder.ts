import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import type { StoredLadder } from "../../src/model/ladder";
import { FFMPEG, ffmpeg } from "../support/tools";

/**
 * A real HLS ladder made with npm's ffmpeg, in the shape the media service's videoLadder makes
 * (container/src/ladder-contract.ts): per rung one fragmented MP4 addressed by byte ranges from
 * its playlist, a master, and a storyboard sprite with its WebVTT file; for the player's tests
 * in Chromium before (and beside) the real pipeline's.
 */

export const CLIP_SECONDS = 8;
const FPS = 25;
/** Seconds between keyframes, and each segment's length. */
const SEGMENT = 2;
const TILE = { width: 160, height: 90 };

/** The test card with a tone, as H.264 + AAC. */
export async function makeClip(dir: string, name = "clip.mp4") {
  const file = path.join(dir, name);
  await ffmpeg([
    ...["-f", "lavfi", "-i", `testsrc2=size=1280x720:rate=${FPS}:duration=${CLIP_SECONDS}`],
    ...["-f", "lavfi", "-i", `sine=frequency=440:duration=${CLIP_SECONDS}`],
    // testsrc2 looks much the same every 2 s once scaled down: a hue turning once over the clip
    // makes every moment's colours its own.
    ...["-vf", `hue=H=2*PI*t/${CLIP_SECONDS}`],
    ...["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest"],
    ...["-movflags", "+faststart", file],
  ]);
  return file;
}

const RUNGS = [
  { name: "720p", width: 1280, height: 720, kbps: 2000 },
  { name: "240p", width: 426, height: 240, kbps: 300 },
];

async function rung(source: string, dir: string, r: (typeof RUNGS)[number]) {
  const playlist = path.join(dir, `${r.name}.m3u8`);
  await ffmpeg([
    ...["-i", source, "-vf", `scale=${r.width}:${r.height}`, "-c:v", "libx264", "-preset", "veryfast"],
    ...[
      "-profile:v",
      "high",
      "-level",
      "3.1",
      "-b:v",
      `${r.kbps}k`,
      "-maxrate",
      `${r.kbps}k`,
      "-bufsize",
      `${r.kbps}k`,
    ],
    ...["-g", String(SEGMENT * FPS), "-keyint_min", String(SEGMENT * FPS), "-sc_threshold", "0"],
    ...["-c:a", "aac", "-b:a", "64k", "-f", "hls", "-hls_time", String(SEGMENT), "-hls_playlist_type", "vod"],
    ...["-hls_segment_type", "fmp4", "-hls_flags", "single_file+independent_segments", playlist],
  ]);
  // ffmpeg names the one file .m4s; a ladder's are .mp4 (LADDER_FILE_NAME).
  const text = (await readFile(playlist, "utf8")).replaceAll(`${r.name}.m4s`, `${r.name}.mp4`);
  return { text, media: await readFile(path.join(dir, `${r.name}.m4s`)) };
}

const clock = (s: number) => `00:00:${s.toFixed(3).padStart(6, "0")}`;

async function storyboard(source: string, dir: string) {
  const tiles = CLIP_SECONDS / SEGMENT;
  const sprite = path.join(dir, "storyboard.jpg");
  await ffmpeg([
    "-i",
    source,
    "-vf",
    `fps=1/${SEGMENT},scale=${TILE.width}:${TILE.height},tile=${tiles}x1`,
    "-frames:v",
    "1",
    sprite,
  ]);
  const cues = Array.from({ length: tiles }, (_, i) => {
    const xywh = `${i * TILE.width},0,${TILE.width},${TILE.height}`;
    return `${clock(i * SEGMENT)} --> ${clock((i + 1) * SEGMENT)}\nstoryboard.jpg#xywh=${xywh}\n`;
  });
  return { vtt: `WEBVTT\n\n${cues.join("\n")}`, image: await readFile(sprite), tiles };
}

export interface MadeLadder {
  files: Record<string, string | Uint8Array>;
  ladder: StoredLadder;
}

/** The ladder of `source` (makeClip's): 720p and 240p, and a storyboard of a tile every 2 s. */
export async function makeLadder(source: string, dir: string): Promise<MadeLadder> {
  const files: Record<string, string | Uint8Array> = {};
  const master = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-INDEPENDENT-SEGMENTS"];
  for (const r of RUNGS) {
    const made = await rung(source, dir, r);
    files[`${r.name}.m3u8`] = made.text;
    files[`${r.name}.mp4`] = made.media;
    const bandwidth = (r.kbps + 64) * 1000;
    master.push(
      `#EXT-X-STREAM-INF:BANDWIDTH=${bandwidth},AVERAGE-BANDWIDTH=${bandwidth},RESOLUTION=${r.width}x${r.height},` +
        'CODECS="avc1.64001f,mp4a.40.2"',
      `${r.name}.m3u8`,
    );
  }
  files["master.m3u8"] = `${master.join("\n")}\n`;
  const board = await storyboard(source, dir);
  files["storyboard.jpg"] = board.image;
  files["storyboard.vtt"] = board.vtt;
  const length = (body: string | Uint8Array) => (typeof body === "string" ? Buffer.byteLength(body) : body.length);
  const ladder: StoredLadder = {
    rungs: RUNGS.map((r) => ({
      name: r.name,
      width: r.width,
      height: r.height,
      bandwidth: (r.kbps + 64) * 1000,
      averageBandwidth: (r.kbps + 64) * 1000,
      codecs: "avc1.64001f,mp4a.40.2",
      remuxed: false,
      playlist: `${r.name}.m3u8`,
      media: `${r.name}.mp4`,
    })),
    storyboard: {
      image: "storyboard.jpg",
      vtt: "storyboard.vtt",
      ...{ tileWidth: 160, tileHeight: 90 },
      columns: board.tiles,
      tiles: board.tiles,
      interval: SEGMENT,
    },
    files: Object.entries(files).map(([name, body]) => ({
      name,
      type: "application/octet-stream",
      length: length(body),
    })),
  };
  return { files, ladder };
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
