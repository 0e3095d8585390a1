/**
 * A video's HLS ladder as the media service answers it and the Worker stores and serves it
 * (beside contract.ts, and like it imported by both sides and importing nothing).
 *
 * The call (videoLadder in contract.ts) sends the upload's stored file (MP4 or WebM, after its
 * conversion or stripping). The answer is one body: a JSON LadderManifest of
 * `X-Media-Manifest-Length` bytes, then each file the manifest lists, in its order, of its stated
 * length; Content-Length counts them all. The Worker stores each file as it streams (R2 puts of
 * known length), so no file is ever held whole in the Worker's memory.
 *
 * Every rendition is one fragmented MP4 (CMAF: an init section, then a fragment per segment)
 * that its media playlist addresses by byte ranges, so a ladder is a handful of objects however
 * long the video is: the master playlist, a playlist and a media file per rung, and the
 * storyboard's image and WebVTT file.
 */

/** The header that says how long the manifest in front of the files is. */
export const MANIFEST_LENGTH_HEADER = "X-Media-Manifest-Length";

/** A manifest is small: a larger claim is a broken answer. */
export const MAX_MANIFEST_BYTES = 64 * 1024;

/** Segments are cut at keyframes about this far apart (RFC 8216 asks for a target duration). */
export const SEGMENT_SECONDS = 4;

/**
 * The rungs a ladder may have, named by the frame's short side (a portrait 1080 x 1920 video is
 * "1080p"), with the most video bits a second each may spend. A source gets the rungs below its
 * own short side, and a top rung at its own size (capped at 1080p): never upscaled.
 */
export const LADDER_RUNGS = [
  { name: "1080p", shortSide: 1080, maxVideoKbps: 5000 },
  { name: "720p", shortSide: 720, maxVideoKbps: 2800 },
  { name: "480p", shortSide: 480, maxVideoKbps: 1400 },
  { name: "360p", shortSide: 360, maxVideoKbps: 800 },
  { name: "240p", shortSide: 240, maxVideoKbps: 400 },
] as const;

export const AUDIO_KBPS = 128;

/** Storyboards: at most this many tiles, each this wide, in rows of STORYBOARD_COLUMNS. */
export const STORYBOARD_MAX_TILES = 100;
export const STORYBOARD_TILE_WIDTH = 160;
export const STORYBOARD_COLUMNS = 10;

/** The only names a ladder's files may have: they become R2 keys and URL paths. */
export const LADDER_FILE_NAME = /^[a-z0-9][a-z0-9-]{0,30}\.(m3u8|mp4|vtt|webp|jpg)$/;
export const MASTER_PLAYLIST = "master.m3u8";

export interface LadderFile {
  /** LADDER_FILE_NAME, unique in the manifest. */
  name: string;
  /** Content-Type to serve it with. */
  type: string;
  length: number;
}

export interface LadderRung {
  /**
   * "1080p" ... "240p", or another `{short side}p` for a top rung at the source's own size;
   * "audio" for an audio-only source.
   */
  name: string;
  /** Null for audio only. */
  width: number | null;
  height: number | null;
  /** RFC 8216's BANDWIDTH (the peak segment's bits a second) and AVERAGE-BANDWIDTH. */
  bandwidth: number;
  averageBandwidth: number;
  /** RFC 6381 codecs, as in the master playlist: "avc1.64001f,mp4a.40.2". */
  codecs: string;
  /** Copied from the source (same codec and size, keyframes that allow it) rather than encoded. */
  remuxed: boolean;
  /** Its media playlist and its fragmented MP4, both among the manifest's files. */
  playlist: string;
  media: string;
}

export interface StoryboardManifest {
  /** The sprite image and the WebVTT file whose cues point into it (`image#xywh=x,y,w,h`). */
  image: string;
  vtt: string;
  tileWidth: number;
  tileHeight: number;
  columns: number;
  tiles: number;
  /** Seconds between tiles. */
  interval: number;
}

export interface LadderManifest {
  /** Seconds. */
  duration: number;
  /** Highest first. */
  rungs: LadderRung[];
  /** Null for audio only. */
  storyboard: StoryboardManifest | null;
  /** MASTER_PLAYLIST first, then every other file; the body's files in this order. */
  files: LadderFile[];
}

/** Why a manifest is refused, or null when it is one the Worker may store. */
export function manifestProblem(manifest: LadderManifest, total: number): string | null {
  if (!manifest || !Array.isArray(manifest.files) || !Array.isArray(manifest.rungs)) return "no files or rungs";
  if (!(typeof manifest.duration === "number" && manifest.duration > 0)) return "no duration";
  const names = new Set<string>();
  let sum = 0;
  for (const file of manifest.files) {
    if (typeof file?.name !== "string" || !LADDER_FILE_NAME.test(file.name)) return `a file name ${String(file?.name)}`;
    if (names.has(file.name)) return `${file.name} twice`;
    if (!Number.isSafeInteger(file.length) || file.length < 0) return `${file.name}'s length`;
    if (typeof file.type !== "string" || !/^[a-z]+\/[a-z0-9.+-]+$/i.test(file.type)) return `${file.name}'s type`;
    names.add(file.name);
    sum += file.length;
  }
  if (manifest.files[0]?.name !== MASTER_PLAYLIST) return "no master playlist first";
  if (manifest.rungs.length === 0) return "no rungs";
  for (const rung of manifest.rungs) {
    if (!names.has(rung.playlist) || !names.has(rung.media)) return `rung ${rung.name}'s files`;
  }
  if (manifest.storyboard && !(names.has(manifest.storyboard.image) && names.has(manifest.storyboard.vtt)))
    return "the storyboard's files";
  if (sum !== total) return `files of ${sum} bytes in an answer of ${total}`;
  return null;
}
