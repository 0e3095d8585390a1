import { findUpload, findUploadInAnyState } from "../storage/uploads";
import { expired, usedUp } from "../model/policy";
import type { UploadRow } from "../model/schema";
import type { Stores } from "../storage/stores";

/** Why an upload's page says it is gone (410) rather than that there is no such upload (404). */
export type Gone = "expired" | "used up";

/**
 * The live upload a page is about, or why it is gone: expired (until its row is purged, 30 days
 * on), or view-limited with its views used up. Null when there is no such upload.
 */
export async function uploadForPage(deps: Stores, id: string): Promise<{ upload: UploadRow } | { gone: Gone } | null> {
  const upload = await findUpload(deps.db, id, deps.now());
  if (upload) return usedUp.of(upload) ? { gone: "used up" } : { upload };
  const row = await findUploadInAnyState(deps.db, id);
  return row && expired.of(row, deps.now()) ? { gone: "expired" } : null;
}

/** The live upload that link previews (oEmbed) may ask about: none once its views are used up. */
export async function uploadForPreview(deps: Stores, id: string): Promise<UploadRow | null> {
  const upload = await findUpload(deps.db, id, deps.now());
  return upload && !usedUp.of(upload) ? upload : null;
}
