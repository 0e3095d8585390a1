import { notFound } from "../../errors";
import type { UploadRow } from "../../model/schema";
import { findServingUpload } from "../../storage/uploads";
import type { Stores } from "../../storage/stores";
import { recordOf } from "./record";
import type { RecordStore } from "./record-store";

export interface ServingDeps extends Stores {
  records: RecordStore;
}

/**
 * The upload as the database has it now. Its record is remembered when it is served plainly;
 * otherwise a record this request found (`hadRecord`) is forgotten, so the next requests ask
 * the database at once instead of trying a removed file first.
 */
async function currentUpload(deps: ServingDeps, id: string, hadRecord: boolean) {
  const now = deps.now();
  const found = await findServingUpload(deps.db, id, now);
  if (found?.plain) deps.records.remember(recordOf(found.row, now), now);
  else if (hadRecord) deps.records.forget(id);
  return found?.row;
}

/**
 * What `serve` makes of the upload as the database has it, after a record was missing, out of
 * date or did not fit the URL (`hadRecord`: one was found). `serve` answers null when the file it
 * needs is not stored: it was replaced or moved between reading the row and reading the file, so
 * the row is read once more, and the answer is all old or all new, never a mix.
 */
export async function fromCurrentUpload<T>(
  deps: ServingDeps,
  id: string,
  hadRecord: boolean,
  serve: (row: UploadRow) => Promise<T | null>,
): Promise<T> {
  for (let attempt = 1; attempt <= 2; attempt++) {
    const row = await currentUpload(deps, id, hadRecord || attempt > 1);
    if (!row) throw notFound("No such upload.");
    const answer = await serve(row);
    if (answer !== null) return answer;
  }
  throw notFound("File not found.");
}
