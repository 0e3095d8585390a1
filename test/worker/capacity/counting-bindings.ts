/**
 * The Worker's bindings wrapped to count what each operation costs: D1 statements, round trips
 * and the rows SQLite reports it read and wrote (meta.rows_read / rows_written), R2 operations by
 * pricing class and bytes, Durable Object calls per namespace, and outbound fetches.
 */
import { env } from "cloudflare:workers";

export interface Costs {
  d1Statements: number;
  d1RoundTrips: number;
  d1RowsRead: number;
  d1RowsWritten: number;
  /** The most parameters bound to one statement (D1 takes at most 100). */
  d1MostBound: number;
  r2ClassA: number;
  r2ClassB: number;
  /** Deletes and aborted multipart uploads, which R2 does not charge. */
  r2Free: number;
  r2BytesIn: number;
  r2BytesOut: number;
  /** R2 calls, each once whatever it names (a delete of 1,000 keys is one): subrequests, not billing. */
  r2Requests: number;
  rateLimiterCalls: number;
  variantLockCalls: number;
  mediaContainerCalls: number;
  fetches: number;
  /** Queue operations as Cloudflare bills them: a message written, read (each delivery, a retry's too), deleted (acked). */
  queueWrites: number;
  queueReads: number;
  queueDeletes: number;
  /** Calls sending to a queue (send, sendBatch): subrequests, not billing. */
  queueCalls: number;
  /**
   * Milliseconds spent waiting on each, summed over calls (the runtime's clock moves only across
   * I/O, so this is the calls' own time plus any wait for the thread): for the benchmarks'
   * breakdown of a request, never compared by a test.
   */
  d1Ms: number;
  r2Ms: number;
  rateLimiterMs: number;
  variantLockMs: number;
  mediaContainerMs: number;
}

export const emptyCosts = (): Costs => ({
  d1Statements: 0,
  d1RoundTrips: 0,
  d1RowsRead: 0,
  d1RowsWritten: 0,
  d1MostBound: 0,
  r2ClassA: 0,
  r2ClassB: 0,
  r2Free: 0,
  r2BytesIn: 0,
  r2BytesOut: 0,
  r2Requests: 0,
  rateLimiterCalls: 0,
  variantLockCalls: 0,
  mediaContainerCalls: 0,
  fetches: 0,
  queueWrites: 0,
  queueReads: 0,
  queueDeletes: 0,
  queueCalls: 0,
  d1Ms: 0,
  r2Ms: 0,
  rateLimiterMs: 0,
  variantLockMs: 0,
  mediaContainerMs: 0,
});

/** `call`'s promise, its time added to `costs[field]` when it settles. */
function timed<T>(costs: Costs, field: "d1Ms" | "r2Ms", call: () => Promise<T>): Promise<T> {
  if (field === "r2Ms") costs.r2Requests++;
  const started = Date.now();
  return call().finally(() => {
    costs[field] += Date.now() - started;
  });
}

type Meta = { rows_read?: number; rows_written?: number };

function countRows(costs: Costs, meta: Meta | undefined) {
  costs.d1RowsRead += meta?.rows_read ?? 0;
  costs.d1RowsWritten += meta?.rows_written ?? 0;
}

/**
 * A statement that counts itself when run. raw() goes through all(), whose result carries the
 * rows counted, and gives its rows back as arrays in column order, as drizzle's own batch path
 * does (a result with two columns of one name would lose one either way).
 */
class CountingStatement {
  constructor(
    readonly real: D1PreparedStatement,
    private readonly costs: Costs,
  ) {}

  bind(...values: unknown[]) {
    this.costs.d1MostBound = Math.max(this.costs.d1MostBound, values.length);
    return new CountingStatement(this.real.bind(...values), this.costs);
  }

  private async run1<T>(): Promise<D1Result<T>> {
    const result = await timed(this.costs, "d1Ms", () => this.real.all<T>());
    this.costs.d1Statements++;
    this.costs.d1RoundTrips++;
    countRows(this.costs, result.meta);
    return result;
  }

  all<T>() {
    return this.run1<T>();
  }

  run<T>() {
    return this.run1<T>();
  }

  async first<T>(column?: string) {
    const row = (await this.run1<Record<string, unknown>>()).results[0];
    if (!row) return null;
    return (column === undefined ? row : row[column]) as T;
  }

  async raw<T extends unknown[]>(options?: { columnNames?: boolean }) {
    const { results } = await this.run1<Record<string, unknown>>();
    const rows = results.map((row) => Object.values(row)) as T[];
    if (options?.columnNames) return [Object.keys(results[0] ?? {}), ...rows];
    return rows;
  }
}

/** Statements and batches through the database or one of its sessions, counted. */
function countingQueries(real: D1Database | D1DatabaseSession, costs: Costs) {
  return {
    prepare: (sql: string) => new CountingStatement(real.prepare(sql), costs),
    async batch(statements: CountingStatement[]) {
      const results = await timed(costs, "d1Ms", () => real.batch(statements.map((s) => s.real)));
      costs.d1RoundTrips++;
      costs.d1Statements += statements.length;
      for (const result of results) countRows(costs, result.meta);
      return results;
    },
  };
}

function countingD1(real: D1Database, costs: Costs): D1Database {
  const wrapper = {
    ...countingQueries(real, costs),
    exec: () => {
      throw new Error("exec() is not counted");
    },
    withSession: (start: string) => {
      const session = real.withSession(start);
      return { ...countingQueries(session, costs), getBookmark: () => session.getBookmark() };
    },
    dump: () => real.dump(),
  };
  return wrapper as unknown as D1Database;
}

function byteLength(value: unknown): number {
  if (value === null || value === undefined) return 0;
  if (typeof value === "string") return new TextEncoder().encode(value).byteLength;
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) return value.byteLength;
  if (value instanceof Blob) return value.size;
  throw new Error(
    `R2 body of unknown length (${Object.prototype.toString.call(value)}): count it by the stored size instead`,
  );
}

function countingR2(real: R2Bucket, costs: Costs): R2Bucket {
  const bytesOut = (object: R2ObjectBody | R2Object | null, options?: R2GetOptions) => {
    if (!object || !("body" in object)) return;
    const range = options?.range as { offset?: number; length?: number; suffix?: number } | undefined;
    if (!range) {
      costs.r2BytesOut += object.size;
      return;
    }
    if (range.suffix !== undefined) {
      costs.r2BytesOut += Math.min(range.suffix, object.size);
      return;
    }
    const offset = range.offset ?? 0;
    costs.r2BytesOut += Math.max(0, Math.min(range.length ?? object.size - offset, object.size - offset));
  };
  const multipart = (upload: R2MultipartUpload): R2MultipartUpload => ({
    key: upload.key,
    uploadId: upload.uploadId,
    async uploadPart(partNumber, value, options) {
      costs.r2ClassA++;
      costs.r2BytesIn += byteLength(value);
      return timed(costs, "r2Ms", () => upload.uploadPart(partNumber, value, options));
    },
    async complete(parts) {
      costs.r2ClassA++;
      return timed(costs, "r2Ms", () => upload.complete(parts));
    },
    async abort() {
      costs.r2Free++;
      return timed(costs, "r2Ms", () => upload.abort());
    },
  });
  const wrapper: Partial<R2Bucket> = {
    async head(key) {
      costs.r2ClassB++;
      return timed(costs, "r2Ms", () => real.head(key));
    },
    async get(key: string, options?: R2GetOptions) {
      costs.r2ClassB++;
      const object = await timed(costs, "r2Ms", () => real.get(key, options));
      bytesOut(object, options);
      return object;
    },
    async put(key: string, value: Parameters<R2Bucket["put"]>[1], options?: R2PutOptions) {
      costs.r2ClassA++;
      const stored = await timed(costs, "r2Ms", () => real.put(key, value, options));
      // A stream's length is what was stored.
      costs.r2BytesIn += stored?.size ?? 0;
      return stored;
    },
    async delete(keys) {
      costs.r2Free += Array.isArray(keys) ? keys.length : 1;
      return timed(costs, "r2Ms", () => real.delete(keys));
    },
    async list(options) {
      costs.r2ClassA++;
      return timed(costs, "r2Ms", () => real.list(options));
    },
    async createMultipartUpload(key, options) {
      costs.r2ClassA++;
      return multipart(await timed(costs, "r2Ms", () => real.createMultipartUpload(key, options)));
    },
    resumeMultipartUpload(key, uploadId) {
      return multipart(real.resumeMultipartUpload(key, uploadId));
    },
  };
  return wrapper as R2Bucket;
}

/** Every call on a stub of the namespace counts once, whatever the method. */
function countingNamespace<T extends Rpc.DurableObjectBranded | undefined>(
  real: DurableObjectNamespace<T>,
  costs: Costs,
  field: "rateLimiterCalls" | "variantLockCalls" | "mediaContainerCalls",
  msField: "rateLimiterMs" | "variantLockMs" | "mediaContainerMs",
): DurableObjectNamespace<T> {
  const wrapper = {
    idFromName: (name: string) => real.idFromName(name),
    idFromString: (id: string) => real.idFromString(id),
    newUniqueId: () => real.newUniqueId(),
    get(id: DurableObjectId) {
      const stub = real.get(id);
      return new Proxy(stub, {
        get(target, property) {
          const stubProperty = (target as unknown as Record<string | symbol, unknown>)[property];
          if (typeof stubProperty !== "function") return stubProperty;
          return (...args: unknown[]) => {
            costs[field]++;
            const started = Date.now();
            // Called on the stub itself: an RPC method must not be detached from it.
            const result = (target as unknown as Record<string | symbol, (...a: unknown[]) => unknown>)[property]!(
              ...args,
            );
            // Timed on the side: the caller gets the RPC promise itself, and its failure.
            const settled = () => {
              costs[msField] += Date.now() - started;
            };
            if (result instanceof Promise || typeof (result as PromiseLike<unknown>)?.then === "function")
              (result as PromiseLike<unknown>).then(settled, settled);
            return result;
          };
        },
      });
    },
  };
  return wrapper as unknown as DurableObjectNamespace<T>;
}

function countingQueue(real: Queue, costs: Costs): Queue {
  return {
    send: (body: unknown, options?: QueueSendOptions) => {
      costs.queueCalls++;
      costs.queueWrites++;
      return real.send(body, options);
    },
    sendBatch: (messages: Iterable<MessageSendRequest>, options?: QueueSendBatchOptions) => {
      const list = [...messages];
      costs.queueCalls++;
      costs.queueWrites += list.length;
      return real.sendBatch(list, options);
    },
  } as Queue;
}

/** A batch the queue hands the consumer, its reads counted, and each ack as the delete it causes. */
export function countingBatch<T>(batch: MessageBatch<T>, costs: Costs): MessageBatch<T> {
  costs.queueReads += batch.messages.length;
  const messages = batch.messages.map((message) => ({
    id: message.id,
    timestamp: message.timestamp,
    body: message.body,
    attempts: message.attempts,
    ack() {
      costs.queueDeletes++;
      message.ack();
    },
    retry: (options?: QueueRetryOptions) => message.retry(options),
  }));
  return {
    queue: batch.queue,
    messages,
    ackAll: () => {
      for (const message of messages) message.ack();
    },
    retryAll: (options?: QueueRetryOptions) => batch.retryAll(options),
  } as unknown as MessageBatch<T>;
}

/** Bindings that count into `costs`, for a request's `app.bindings` (helpers.ts). */
export function countingBindings(costs: Costs): Partial<Cloudflare.Env> {
  return {
    WEBHOOK_DELIVERIES: countingQueue(env.WEBHOOK_DELIVERIES, costs),
    DB: countingD1(env.DB, costs),
    FILES: countingR2(env.FILES, costs),
    RATE_LIMITER: countingNamespace(env.RATE_LIMITER, costs, "rateLimiterCalls", "rateLimiterMs"),
    VARIANT_LOCKS: countingNamespace(env.VARIANT_LOCKS, costs, "variantLockCalls", "variantLockMs"),
    MEDIA_CONTAINER: countingNamespace(env.MEDIA_CONTAINER, costs, "mediaContainerCalls", "mediaContainerMs"),
  };
}

/**
 * Counts outbound fetches (link downloads, DNS) while `run` runs. Requests to the local media
 * service are the container Durable Object's own traffic to its container (counted as
 * MEDIA_CONTAINER calls where the Worker makes them), not the Worker's.
 */
export async function countingFetches<T>(costs: Costs, run: () => Promise<T>): Promise<T> {
  const real = globalThis.fetch;
  globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
    const url = input instanceof Request ? input.url : String(input);
    if (!url.startsWith(env.MEDIA_SERVICE_URL)) costs.fetches++;
    return real(input, init);
  }) as typeof fetch;
  try {
    return await run();
  } finally {
    globalThis.fetch = real;
  }
}
