import type { UploadRow } from "../model/schema";
import { isoTimestamp } from "../time";
import { deleteLink, uploadLinks } from "./public-urls";
import { signUrl } from "./access/signed-links";
import { locked, signedPlayback } from "../model/policy";
import { playbackLinks } from "./streaming/playback";
import { focalOf } from "./transforms/focal";

/** How to sign a locked upload's links: the secret, and the time they count from. */
export interface Signing {
  secret: string;
  now: number;
}

/**
 * A locked upload's `path` and `thumb` are short-lived signed links; `src` and `direct` stay.
 * Without `signing` (a caller that may not open the upload) they stay unsigned, and so refused.
 */
async function links(
  row: Pick<UploadRow, "id" | "objectKey" | "thumbKey" | "passwordHash">,
  origin: string,
  signing: Signing | null,
) {
  const plain = uploadLinks(origin, row);
  if (!locked.of(row) || !signing) return plain;
  return {
    ...plain,
    path: await signUrl(signing.secret, plain.path, signing.now),
    thumb: plain.thumb ? await signUrl(signing.secret, plain.thumb, signing.now) : null,
  };
}

type LadderRow = Pick<
  UploadRow,
  "id" | "type" | "objectKey" | "ladder" | "passwordHash" | "maxViews" | "visibility" | "duration"
>;

/**
 * A video's HLS fields. A locked, view-limited or private upload's playlists are served only
 * with a signed link, so its owner's `hls` and `storyboard` are signed (valid SIGNED_LINK_SECONDS;
 * the playlists sign what they name themselves); without `signing` they stay unsigned, and so refused.
 */
async function ladderFields(row: LadderRow, origin: string, signing: Signing | null) {
  const { hls, storyboard } = playbackLinks(origin, row) ?? { hls: null, storyboard: null };
  const sign = (url: string | null) =>
    url && signedPlayback(row) && signing ? signUrl(signing.secret, url, signing.now) : Promise.resolve(url);
  return {
    duration: row.duration,
    hls: await sign(hls),
    storyboard: await sign(storyboard),
    rungs:
      row.ladder?.rungs.map((rung) => ({
        name: rung.name,
        width: rung.width,
        height: rung.height,
        bandwidth: rung.bandwidth,
        average_bandwidth: rung.averageBandwidth,
        codecs: rung.codecs,
      })) ?? null,
  };
}

/** The upload's `thumb` as the Upload resource has it (an album's cover). */
export async function presentThumb(
  row: Pick<UploadRow, "id" | "objectKey" | "thumbKey" | "passwordHash">,
  origin: string,
  signing: Signing | null,
) {
  return (await links(row, origin, signing)).thumb;
}

/**
 * Where the work after the upload stands. The percent follows from the state where it is known
 * (0 queued, 100 ready, none once failed) and is the last figure written while running; the
 * error is shown only with "failed", or "queued" when the wait has words. A row from before the
 * columns shows its own updated_at.
 */
export function presentProcessing(
  row: Pick<
    UploadRow,
    "processingState" | "processingPercent" | "processingError" | "processingUpdatedAt" | "updatedAt"
  >,
) {
  const state = row.processingState;
  const percent = { queued: 0, running: row.processingPercent, ready: 100, failed: null }[state];
  return {
    state,
    percent,
    // A queued upload's words say why it waits, when that is the owner's to know (a daily limit).
    error: state === "failed" || state === "queued" ? row.processingError : null,
    updated_at: isoTimestamp(row.processingUpdatedAt || row.updatedAt),
  };
}

/** The Upload resource of the spec, as list items, GET and PATCH return it (and `processing`, an extension). */
export async function presentUpload(row: UploadRow, origin: string, signing: Signing | null) {
  return {
    id: row.id,
    type: row.type,
    ...(await links(row, origin, signing)),
    // '' records a thumbnail that gave none (uploads/placeholders.ts): no placeholder either way.
    placeholder: row.placeholder || null,
    color: row.placeholder ? row.color : null,
    width: row.width,
    height: row.height,
    size: row.size,
    locked: locked.of(row),
    visibility: row.visibility,
    title: row.title,
    description: row.description,
    expires_at: row.expiresAt === null ? null : isoTimestamp(row.expiresAt),
    created_at: isoTimestamp(row.createdAt),
    processing: presentProcessing(row),
    focal: focalOf(row),
    ...(await ladderFields(row, origin, signing)),
  };
}

/** The Upload resource as the upload response returns it (`signing` null: links unsigned). */
export async function presentUploadResult(
  row: UploadRow,
  origin: string,
  signing: Signing | null,
  result: { duplicate: boolean; deleteToken?: string },
) {
  const { created_at: _, ...upload } = await presentUpload(row, origin, signing);
  return {
    ...upload,
    duplicate: result.duplicate,
    ...(result.deleteToken ? { delete_url: deleteLink(origin, row.id, result.deleteToken) } : {}),
  };
}
