import type { Database } from "./db";
import type { DeliveryQueue } from "./webhook-outbox";

/**
 * The stores every domain function works on: the database, the bucket of files, the queue that
 * webhook deliveries are handed to once their change commits, and the clock that stamps what is
 * written. Built from the Worker's bindings in src/deps.ts; tests pass real
 * local bindings and their own clock.
 */
export interface Stores {
  db: Database;
  bucket: R2Bucket;
  deliveries: DeliveryQueue;
  now: () => number;
}

/** What writing a change with its webhook events needs (batchWithEvents). */
export type Outbox = Pick<Stores, "db" | "deliveries">;
