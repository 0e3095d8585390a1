/**
 * A video's HLS ladder as its upload's row keeps it (uploads.ladder): what the media job stored
 * under the file's variant folder (storage/keys.ts, ladderKey) and what the answer and the HLS
 * routes read. The media service's manifest (container/src/ladder-contract.ts) is its source.
 */
export interface StoredRung {
  /** "1080p" ... "240p", another `{short side}p` for a top rung at the source's own size, or "audio". */
  name: string;
  width: number | null;
  height: number | null;
  /** Bits a second: the peak segment's, and the average (RFC 8216's BANDWIDTH, AVERAGE-BANDWIDTH). */
  bandwidth: number;
  averageBandwidth: number;
  /** RFC 6381: "avc1.64001f,mp4a.40.2". */
  codecs: string;
  /** Copied from the source rather than encoded. */
  remuxed: boolean;
  /** Its media playlist's and fragmented MP4's file names, among `files`. */
  playlist: string;
  media: string;
}

export interface StoredStoryboard {
  /** The sprite's and the WebVTT file's names, among `files`. */
  image: string;
  vtt: string;
  tileWidth: number;
  tileHeight: number;
  columns: number;
  tiles: number;
  /** Seconds between tiles. */
  interval: number;
}

export interface StoredLadder {
  /**
   * The name the attempt that made it gave its files' keys (random): every attempt writes keys of
   * its own, so one that lost its job's lease never overwrites, nor removes, the ladder of the
   * attempt that took the job over.
   */
  id: string;
  /** Highest first. */
  rungs: StoredRung[];
  storyboard: StoredStoryboard | null;
  /** Every stored file: its name (the last part of its key and of its URL), type and length. */
  files: { name: string; type: string; length: number }[];
}

/** The master playlist's name, among every ladder's files. */
export const MASTER_PLAYLIST = "master.m3u8";

/**
 * A video's `processing.percent` while its job runs: its file's conversion (or stripping) reports
 * into 0 to this, its ladder's encoding into this to 100. The ladder encodes several renditions
 * where the file phase encodes one (or only copies), so it takes the larger share.
 */
export const FILE_PHASE_PERCENT = 30;
