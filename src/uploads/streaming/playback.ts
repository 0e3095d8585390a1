import { signedPlayback } from "../../model/policy";
import type { UploadRow } from "../../model/schema";
import { signUrlFor } from "../access/signed-links";
import { MASTER_PLAYLIST } from "../../model/ladder";
import { ladderName, masterOf, playbackSeconds, type LadderFile } from "./ladder-files";
import { ladderUris, rewriteUris, type UriFor } from "./playlists";

type PlaybackRow = Pick<UploadRow, "id" | "objectKey" | "duration" | "visibility" | "passwordHash" | "maxViews">;

/** Where the upload's ladder files are, as `origin` (a request's) names them: /h/{id}/{ladder}/. */
export const ladderFolder = (origin: string, row: PlaybackRow) => new URL(`/h/${row.id}/${ladderName(row)}/`, origin);

/**
 * The URIs a playlist of the upload's current ladder hands out: the master's lead into the
 * ladder's folder, the others' sit beside their files; signed for playbackSeconds when its
 * playback is signed (signedPlayback), with the secret file links are signed with.
 */
export function playbackUris(row: PlaybackRow, origin: string, from: "master" | "ladder", secret: string, now: number) {
  const seconds = playbackSeconds(row.duration);
  const sign = signedPlayback(row) ? (url: string) => signUrlFor(secret, url, now, seconds) : null;
  return ladderUris(ladderFolder(origin, row), from === "master" ? `${ladderName(row)}/` : "", sign);
}

/** A playlist's or the storyboard's text as its reader gets it; null when it is not stored (any more). */
export async function ladderText(bucket: R2Bucket, file: LadderFile, uris: UriFor): Promise<string | null> {
  if (file.kind === "media") throw new Error(`${file.name} is not text`);
  const object = await bucket.get(file.key);
  return object ? rewriteUris(file.kind, await object.text(), uris) : null;
}

type LinkRow = PlaybackRow & Pick<UploadRow, "type" | "ladder">;

/**
 * The upload's playback URLs: `hls`, the stable URL of its current master playlist, and
 * `storyboard`, its WebVTT file of seek previews (null without one); null without a ladder.
 */
export function playbackLinks(origin: string, row: LinkRow): { hls: string; storyboard: string | null } | null {
  if (!masterOf(row)) return null;
  const storyboard = row.ladder!.storyboard;
  return {
    hls: new URL(`/h/${row.id}/${MASTER_PLAYLIST}`, origin).toString(),
    storyboard: storyboard ? new URL(storyboard.vtt, ladderFolder(origin, row)).toString() : null,
  };
}
