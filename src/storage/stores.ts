import type { Database } from "./db";

/**
 * The stores every domain function works on: the database, the bucket of files, and the clock
 * that stamps what is written. Built from the Worker's bindings in src/deps.ts; tests pass real
 * local bindings and their own clock.
 */
export interface Stores {
  db: Database;
  bucket: R2Bucket;
  now: () => number;
}
