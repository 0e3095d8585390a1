import type { Database } from "../storage/db";

/** What the upload domain needs from the outside world; tests pass real local bindings. */
export interface UploadDeps {
  db: Database;
  bucket: R2Bucket;
  now: () => number;
}
