import type { Pixels } from "../media/image/codecs";
import { placeholderOfPixels, placeholderOfWebp } from "../media/image/placeholder";
import type { UploadRow } from "../model/schema";
import { MiB } from "../model/spec-limits";
import { type PlaceholderColumns, placeholderWrite } from "../storage/upload-placeholders";
import type { Stores } from "../storage/stores";

/*
 * Each upload's placeholder (a ThumbHash) and colour, made of its thumbnail wherever one is stored,
 * on a read of an upload that has none yet, and by the cron job's backfill (cleanup/placeholders.ts).
 * Never a reason for anything else to fail: what cannot be made now is left for later.
 */

/** Not made yet: the next read or the backfill tries again. */
export const NO_PLACEHOLDER_YET: PlaceholderColumns = { placeholder: null, color: null };
/**
 * The thumbnail could not be decoded: recorded as placeholder '' (answered as null), so that no
 * read or backfill decodes it again. A new thumbnail (a replace) starts over from null.
 */
export const NO_PLACEHOLDER: PlaceholderColumns = { placeholder: "", color: null };

/** A stored thumbnail larger than this is not decoded for one (they are a few KiB). */
const THUMBNAIL_MAX_BYTES = 2 * MiB;

function logged(uploadId: string, error: unknown) {
  console.log(JSON.stringify({ upload: uploadId, placeholder: String(error) }));
}

/** From the thumbnail's pixels, where the Worker has just made them. */
export function placeholderFromPixels(uploadId: string, pixels: Pixels | undefined): PlaceholderColumns {
  try {
    if (!pixels) throw new Error("the thumbnail's pixels were not kept");
    return placeholderOfPixels(pixels);
  } catch (error) {
    logged(uploadId, error);
    return NO_PLACEHOLDER;
  }
}

/** From the thumbnail's WebP bytes (a media service's answer, or what storage holds). */
export async function placeholderFromWebp(uploadId: string, bytes: Uint8Array): Promise<PlaceholderColumns> {
  try {
    return (await placeholderOfWebp(bytes)) ?? NO_PLACEHOLDER_YET;
  } catch (error) {
    logged(uploadId, error);
    return NO_PLACEHOLDER;
  }
}

/** From the stored thumbnail `thumbKey`; a storage error is left for later, a missing file is none. */
export async function placeholderFromStored(bucket: R2Bucket, uploadId: string, thumbKey: string) {
  const object = await bucket.get(thumbKey).catch((error: unknown) => {
    logged(uploadId, error);
    return undefined;
  });
  if (object === undefined) return NO_PLACEHOLDER_YET;
  if (!object || object.size > THUMBNAIL_MAX_BYTES) {
    await object?.body.cancel();
    logged(uploadId, object ? `the thumbnail has ${object.size} bytes` : "the thumbnail is missing");
    return NO_PLACEHOLDER;
  }
  return placeholderFromWebp(uploadId, new Uint8Array(await object.arrayBuffer()));
}

/**
 * The upload as a single read answers it: one with a thumbnail and no placeholder yet gets it made
 * now (one thumbnail read and decode) and stored. A write that fails leaves it for the backfill.
 */
export async function withPlaceholder(deps: Stores, row: UploadRow): Promise<UploadRow> {
  if (row.placeholder !== null || row.thumbKey === null) return row;
  const columns = await placeholderFromStored(deps.bucket, row.id, row.thumbKey);
  if (columns.placeholder === null) return row;
  await placeholderWrite(deps.db, row.id, row.thumbKey, columns).catch((error: unknown) => logged(row.id, error));
  return { ...row, ...columns };
}
