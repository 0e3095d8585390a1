import type { UploadRow } from "../../model/schema";
import { filesIndexable, live, unrestricted } from "../../model/policy";

/** What serving one of an upload's files needs to know, from its row or from a record of it. */
export interface ServingFacts {
  id: string;
  type: UploadRow["type"];
  objectKey: string;
  mime: string;
  /** Display width, when known: what a variant may be at most (src/uploads/variants). */
  width: number | null;
  /** Served whole: no variants (src/uploads/variants/plan.ts). */
  animated: boolean;
  /** The owner's focal point, what `gravity=auto` crops around (src/uploads/transforms); null for none. */
  focalX: number | null;
  focalY: number | null;
  size: number;
  etag: string;
  thumbKey: string | null;
  /** Never changes: an upload's expiry cannot be moved. */
  expiresAt: number | null;
  /** filesIndexable: its files may be indexed (no X-Robots-Tag), and shared caches may keep path and thumb. */
  indexable: boolean;
  /** Unrestricted (neither locked nor view-limited): caches may keep its files (src always revalidated). */
  shared: boolean;
}

/**
 * The facts of a plainly served upload (servedPlain in src/model/policy.ts), remembered so
 * that its files are served without asking the database. A record is never updated: anything
 * that would make it wrong moves or removes the files it names, so a stale record leads to a
 * missing object and the request falls back to the database.
 */
export interface ServingRecord extends ServingFacts {
  v: typeof RECORD_VERSION;
  /** Read from the database until then; an older record is not used. */
  freshUntil: number;
}

/** Changes whenever the record's shape does, so records of another shape are never read. */
const RECORD_VERSION = 4;

/**
 * How long a record is used after its database read. Only bounds how long a record outlives a
 * file whose removal failed (the change's answer then says so); otherwise a record is exact.
 */
export const RECORD_TTL_MS = 60_000;

export const factsOf = (row: UploadRow): ServingFacts => ({
  id: row.id,
  type: row.type,
  objectKey: row.objectKey,
  mime: row.mime,
  width: row.width,
  animated: row.animated,
  focalX: row.focalX,
  focalY: row.focalY,
  size: row.size,
  etag: row.etag,
  thumbKey: row.thumbKey,
  expiresAt: row.expiresAt,
  indexable: filesIndexable(row),
  shared: unrestricted.of(row),
});

/** The record of a row the database says is served plainly. */
export const recordOf = (row: UploadRow, now: number): ServingRecord => ({
  ...factsOf(row),
  shared: true,
  v: RECORD_VERSION,
  freshUntil: now + RECORD_TTL_MS,
});

/** Whether a record may still be used at `now`: fresh, and of an upload that has not expired. */
export const usable = (record: ServingRecord, now: number) =>
  record.v === RECORD_VERSION && record.freshUntil > now && live.of(record, now);
