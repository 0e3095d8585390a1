import { LADDER_FILE_NAME } from "../../../container/src/ladder-contract";
import { MASTER_PLAYLIST, type StoredLadder } from "../../model/ladder";
import type { UploadRow } from "../../model/schema";
import { ladderKey, objectName } from "../../storage/keys";
import { SIGNED_LINK_SECONDS } from "../access/signed-links";

/** What a ladder's file is to its reader: a playlist or the storyboard's WebVTT (text naming other files), or bytes. */
export type LadderFileKind = "playlist" | "storyboard" | "media";

export interface LadderFile {
  name: string;
  key: string;
  kind: LadderFileKind;
  /** The Content-Type it is served with, from its extension (the only ones LADDER_FILE_NAME allows). */
  type: string;
}

const TYPES: Record<string, { type: string; kind: LadderFileKind }> = {
  m3u8: { type: "application/vnd.apple.mpegurl", kind: "playlist" },
  vtt: { type: "text/vtt; charset=utf-8", kind: "storyboard" },
  mp4: { type: "video/mp4", kind: "media" },
  webp: { type: "image/webp", kind: "media" },
  jpg: { type: "image/jpeg", kind: "media" },
};

type LadderRow = Pick<UploadRow, "type" | "objectKey" | "ladder">;

/** The name the upload's current ladder goes by in its URLs: its file's (a new file, a new ladder). */
export const ladderName = (row: Pick<UploadRow, "objectKey">) => objectName(row.objectKey);

const fileAt = (row: LadderRow & { ladder: StoredLadder }, name: string): LadderFile | null => {
  if (!LADDER_FILE_NAME.test(name)) return null;
  const known = TYPES[name.slice(name.lastIndexOf(".") + 1)];
  return known ? { name, key: ladderKey(row.objectKey, row.ladder.id, name), ...known } : null;
};

/** The upload's master playlist, or null when it has no ladder (yet, or as no video). */
export function masterOf(row: LadderRow): LadderFile | null {
  if (row.type !== "video" || !row.ladder) return null;
  return fileAt({ ...row, ladder: row.ladder }, MASTER_PLAYLIST);
}

/**
 * The file `name` of the ladder named `ladder`, when that is the upload's current one and lists
 * it; null otherwise: a player must never mix two ladders' files, so an old ladder's name is
 * not redirected. The master goes only by its own stable URL, where a playback's view is taken.
 */
export function ladderFileOf(row: LadderRow, ladder: string, name: string): LadderFile | null {
  if (row.type !== "video" || !row.ladder || ladder !== ladderName(row) || name === MASTER_PLAYLIST) return null;
  if (!row.ladder.files.some((file) => file.name === name)) return null;
  return fileAt({ ...row, ladder: row.ladder }, name);
}

/** Six hours: no signed link outlives that, however long the video. */
const MAX_PLAYBACK_SECONDS = 6 * 3600;

/**
 * How long the signatures a playlist hands out stay valid: the page's link's lifetime, and twice
 * the video's duration (a playback paused, sought back, or on a slow network must outlast it).
 */
export const playbackSeconds = (duration: number | null) =>
  Math.min(MAX_PLAYBACK_SECONDS, SIGNED_LINK_SECONDS + 2 * Math.ceil(duration ?? 0));
