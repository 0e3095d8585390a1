import type { LadderRung } from "./ladder-contract";
import type { StoryboardPlan } from "./ladder-plan";

/**
 * The ladder's text files (RFC 8216 playlists and the storyboard's WebVTT), every URI in them a
 * relative file name: the Worker rewrites or signs them as it serves them.
 */
export interface Segment {
  offset: number;
  length: number;
  /** Seconds. */
  duration: number;
}

/** A VOD media playlist addressing one fragmented MP4 by byte ranges: its init section, then each segment. */
export function mediaPlaylist(media: string, initLength: number, segments: Segment[]): string {
  const longest = Math.max(...segments.map((s) => s.duration));
  const lines = [
    "#EXTM3U",
    "#EXT-X-VERSION:7",
    `#EXT-X-TARGETDURATION:${Math.max(1, Math.ceil(Number(longest.toFixed(3))))}`,
    "#EXT-X-MEDIA-SEQUENCE:0",
    "#EXT-X-PLAYLIST-TYPE:VOD",
    "#EXT-X-INDEPENDENT-SEGMENTS",
    `#EXT-X-MAP:URI="${media}",BYTERANGE="${initLength}@0"`,
  ];
  for (const segment of segments) {
    lines.push(
      `#EXTINF:${segment.duration.toFixed(3)},`,
      `#EXT-X-BYTERANGE:${segment.length}@${segment.offset}`,
      media,
    );
  }
  lines.push("#EXT-X-ENDLIST");
  return `${lines.join("\n")}\n`;
}

/** The master playlist: a variant stream per rung, highest first. */
export function masterPlaylist(rungs: LadderRung[]): string {
  const lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-INDEPENDENT-SEGMENTS"];
  for (const rung of rungs) {
    const attributes = [
      `BANDWIDTH=${rung.bandwidth}`,
      `AVERAGE-BANDWIDTH=${rung.averageBandwidth}`,
      ...(rung.width && rung.height ? [`RESOLUTION=${rung.width}x${rung.height}`] : []),
      `CODECS="${rung.codecs}"`,
    ];
    lines.push(`#EXT-X-STREAM-INF:${attributes.join(",")}`, rung.playlist);
  }
  return `${lines.join("\n")}\n`;
}

/** A cue per tile, each pointing at its place in the sprite (`image#xywh=x,y,w,h`), up to the end. */
export function storyboardVtt(board: StoryboardPlan, columns: number, image: string, duration: number): string {
  const cues = ["WEBVTT", ""];
  for (let i = 0; i < board.tiles; i++) {
    const from = i * board.interval;
    const to = i === board.tiles - 1 ? duration : Math.min(duration, (i + 1) * board.interval);
    const x = (i % columns) * board.tileWidth;
    const y = Math.floor(i / columns) * board.tileHeight;
    cues.push(`${clock(from)} --> ${clock(to)}`, `${image}#xywh=${x},${y},${board.tileWidth},${board.tileHeight}`, "");
  }
  return cues.join("\n");
}

/** WebVTT's hh:mm:ss.ttt. */
function clock(seconds: number): string {
  const ms = Math.round(seconds * 1000);
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  const [hours, minutes, secs] = [Math.floor(ms / 3_600_000), Math.floor(ms / 60_000) % 60, Math.floor(ms / 1000) % 60];
  return `${pad(hours)}:${pad(minutes)}:${pad(secs)}.${pad(ms % 1000, 3)}`;
}
