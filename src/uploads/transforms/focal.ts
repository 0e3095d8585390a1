import { unprocessable } from "../../errors";
import { deleteObjects } from "../../storage/objects";
import { transformPrefix } from "../../storage/keys";
import type { UploadRow } from "../../model/schema";
import { gravityMark } from "./name";

/** A focal point as answers and requests carry it: fractions of the upright image, 0,0 its top left. */
export interface FocalPoint {
  x: number;
  y: number;
}

/**
 * The most transform copies of one file looked through for those at an old focal point: one R2
 * listing (https://developers.cloudflare.com/r2/api/workers/workers-api-reference/, `list`),
 * above the few hundred copies an upload may keep. The orphan sweep takes any past it once the
 * file goes.
 */
const LISTED_COPIES = 1000;

/** A focal point is an image's: a video's posters are frames, never crops around one. */
export const focalOnVideo = () => unprocessable("focal: a focal point is for images; a video cannot have one.");

/** The upload's focal point, or null for none. */
export const focalOf = (row: Pick<UploadRow, "focalX" | "focalY">): FocalPoint | null =>
  row.focalX === null || row.focalY === null ? null : { x: row.focalX, y: row.focalY };

/** The columns a focal point is written to (null clears both). */
export const focalColumns = (focal: FocalPoint | null) => ({ focalX: focal?.x ?? null, focalY: focal?.y ?? null });

/** Whether writing `to` moves a focal point the upload has: copies may have been cropped around the old one. */
export function movesFocalPoint(row: Pick<UploadRow, "focalX" | "focalY">, to: Partial<UploadRow>): boolean {
  const old = focalOf(row);
  if (!old || to.focalX === undefined) return false;
  return to.focalX !== old.x || to.focalY !== old.y;
}

/**
 * Removes the copies of the file `objectKey` cropped around `point` (their names carry
 * gravityMark), once the upload no longer has it: copies around any other gravity stay.
 */
export async function removeCopiesAtPoint(bucket: R2Bucket, objectKey: string, point: FocalPoint): Promise<void> {
  const mark = gravityMark(point);
  const listing = await bucket.list({ prefix: transformPrefix(objectKey), limit: LISTED_COPIES });
  const keys = listing.objects.map((object) => object.key).filter((key) => key.includes(mark));
  await deleteObjects(bucket, keys);
}
