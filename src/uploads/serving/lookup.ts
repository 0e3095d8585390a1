import { findServingUpload } from "../../storage/uploads";
import { AWAITING_CONVERSION } from "../media-jobs/webp-policy";
import type { UploadDeps } from "../upload-deps";
import { recordOf } from "./record";
import type { RecordStore } from "./record-store";

export interface ServingDeps extends UploadDeps {
  records: RecordStore;
}

/**
 * The upload as the database has it now. Its record is remembered when it is served plainly;
 * otherwise a record this request found (`hadRecord`) is forgotten, so the next requests ask
 * the database at once instead of trying a removed file first.
 */
export async function currentUpload(deps: ServingDeps, id: string, hadRecord: boolean) {
  const now = deps.now();
  const found = await findServingUpload(deps.db, id, now, AWAITING_CONVERSION);
  if (found?.plain) deps.records.remember(recordOf(found.row, now), now);
  else if (hadRecord) deps.records.forget(id);
  return found?.row;
}
