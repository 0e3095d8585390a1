import type { LadderManifest } from "../../../container/src/ladder-contract";
import type { StoredLadder } from "../../model/ladder";
import type { UploadRow } from "../../model/schema";
import type { HeldJob } from "../../storage/media-jobs";
import { randomBase62 } from "../../crypto";
import { ladderKey } from "../../storage/keys";
import { chargeVideoSeconds, storeLadder } from "../../storage/ladder-phase";
import { putNewFile, storedFile } from "../../storage/stored-file";
import type { ProgressWatch } from "../../media/service";
import { ladderByteLimit } from "../../media/ladder-answer";
import type { MediaDeps } from "./processing";

/**
 * A video's HLS ladder, its media job's second phase (model/schema.ts, JOB_PHASES): made by the
 * media service from the file the first phase stored, each file put to R2 under the file's
 * variant folder as it streams, then made visible by one fenced UPDATE (storeLadder). Half a
 * ladder is never seen: until that UPDATE the upload names none.
 */

const DAY_MS = 24 * 60 * 60_000;
/** A UTC day as video_seconds counts it: days since the epoch. */
export const utcDay = (now: number) => Math.floor(now / DAY_MS);
export const nextUtcDayAt = (now: number) => (utcDay(now) + 1) * DAY_MS;

/** What the daily limit says of a ladder: go on, wait for tomorrow, or never (longer than a day's limit). */
export type DailyCharge = "charged" | "tomorrow" | "never";

export interface LadderDeps extends MediaDeps {
  /** VIDEO_MINUTES_PER_DAY, in seconds. */
  videoSecondsPerDay: number;
}

/**
 * What a video whose length no tool could read before its ladder (a WebM recorded in a browser
 * has none in its header) is charged up front: a second, so that an account whose day is spent
 * waits; the rest is charged from the ladder's own length once it is stored (storeLadder).
 */
const UNKNOWN_LENGTH_SECONDS = 1;

/** The seconds charged before the ladder is made. */
const upFront = (duration: number | null) => (duration === null ? UNKNOWN_LENGTH_SECONDS : Math.ceil(duration));

/**
 * Charges the video's whole seconds to its account's day, once per job (a job charged already
 * goes on): "never" for a video longer than a whole day's limit.
 */
export async function chargeLadder(
  deps: LadderDeps,
  job: HeldJob & { chargedDay: number | null },
  upload: Pick<UploadRow, "accountId" | "duration">,
): Promise<DailyCharge> {
  if (job.chargedDay !== null) return "charged";
  const limit = deps.videoSecondsPerDay;
  const seconds = upFront(upload.duration);
  if (seconds > limit) return "never";
  const charged = await chargeVideoSeconds(deps.db, job, upload.accountId, seconds, utcDay(deps.now()), limit);
  return charged ? "charged" : "tomorrow";
}

/**
 * Makes and stores the ladder of the upload's file (the job's source), listing every key it puts
 * in `written`: whether it is the upload's now, or why not (storeLadder).
 */
export async function makeLadder(
  deps: MediaDeps,
  job: HeldJob,
  upload: UploadRow,
  written: string[],
  watch: ProgressWatch,
): Promise<"stored" | "moved" | "lost"> {
  const format = upload.mime === "video/webm" ? "webm" : "mp4";
  const source = await storedFile(deps.bucket, upload.objectKey);
  const call = { operation: "videoLadder", format, maxBytes: ladderByteLimit(source.size) } as const;
  const answer = await deps.media.call(call, source.body, source.size, watch);
  const id = randomBase62(10);
  for (let part = await answer.next(); part; part = await answer.next()) {
    const key = ladderKey(upload.objectKey, id, part.file.name);
    await putNewFile(deps.bucket, key, part.body, part.file.type, written);
  }
  // A video of unknown length learns it from its ladder, and is charged the rest of it then.
  const length = upload.duration === null ? answer.manifest.duration : null;
  const rest = length === null ? 0 : Math.max(0, Math.ceil(length) - UNKNOWN_LENGTH_SECONDS);
  return storeLadder(deps, job, { ladder: storedLadderOf(answer.manifest, id), length, rest }, deps.now());
}

/** What the upload's row keeps of a manifest (model/ladder.ts). */
export function storedLadderOf(manifest: LadderManifest, id: string): StoredLadder {
  return {
    id,
    rungs: manifest.rungs.map((rung) => ({ ...rung })),
    storyboard: manifest.storyboard ? { ...manifest.storyboard } : null,
    files: manifest.files.map(({ name, type, length }) => ({ name, type, length })),
  };
}
