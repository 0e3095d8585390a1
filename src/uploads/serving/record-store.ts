import { usable, type ServingRecord } from "./record";

/** Records one isolate keeps: at most this many, the least recently used dropped first (about 300 bytes each). */
const MEMO_ENTRIES = 1000;

/** The records of one isolate, newest use last. */
class RecordMemo {
  private readonly entries = new Map<string, ServingRecord>();

  constructor(private readonly capacity = MEMO_ENTRIES) {}

  get size() {
    return this.entries.size;
  }

  get(id: string): ServingRecord | undefined {
    const record = this.entries.get(id);
    if (record) {
      this.entries.delete(id);
      this.entries.set(id, record);
    }
    return record;
  }

  set(record: ServingRecord) {
    this.entries.delete(record.id);
    this.entries.set(record.id, record);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  delete(id: string) {
    this.entries.delete(id);
  }
}

/** This isolate's records, shared by its requests. */
export const isolateMemo = new RecordMemo();

/** Where records are kept in a colo's cache (a name no request can reach). */
const recordCacheKey = (id: string) => `https://serving-records.invalid/${encodeURIComponent(id)}`;

export interface RecordStore {
  /** A usable record of the upload, from this isolate or else from the colo's cache. */
  recall(id: string, now: number): Promise<ServingRecord | null>;
  remember(record: ServingRecord, now: number): void;
  forget(id: string): void;
}

/**
 * Records in the isolate's memo, backed by the colo's cache (`cache`, absent where there is
 * none). Cache writes run after the response (`background`); a failing cache only costs a
 * database read.
 */
export function recordStore(
  memo: RecordMemo,
  cache: Cache | undefined,
  background: (work: Promise<unknown>) => void,
): RecordStore {
  return {
    async recall(id, now) {
      const held = memo.get(id);
      if (held && usable(held, now)) return held;
      if (held) memo.delete(id);
      if (!cache) return null;
      const cached = await cache
        .match(recordCacheKey(id))
        .then((response) => (response ? response.json<ServingRecord>() : null))
        .catch(() => null);
      if (!cached || cached.id !== id || !usable(cached, now)) return null;
      memo.set(cached);
      return cached;
    },
    remember(record, now) {
      memo.set(record);
      if (!cache) return;
      const seconds = Math.ceil((record.freshUntil - now) / 1000);
      const response = Response.json(record, { headers: { "Cache-Control": `max-age=${seconds}` } });
      background(cache.put(recordCacheKey(record.id), response).catch(() => {}));
    },
    forget(id) {
      memo.delete(id);
      if (cache) background(cache.delete(recordCacheKey(id)).catch(() => {}));
    },
  };
}
