import { and, eq, gte, lt, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { randomBase62 } from "../crypto";
import { albums, uploads } from "../model/schema";
import type { WebhookEventType } from "../model/webhook-events";
import { webhookDeliveries, webhookEvents } from "../model/webhook-schema";
import type { Database } from "./db";
import { compiled, type StatementWriter } from "./compiled";
import { rowJson } from "./row-json";

/*
 * The outbox of webhook events: each event is written by statements that run in the same D1
 * batch (one transaction) as the change it reports, so a committed change always has its event
 * and a change that rolled back never does. The statements read the change's subject (an upload
 * or an album) as it is at that point of the batch: after an insert or an update, before a
 * delete. An account without an endpoint that takes the event writes nothing.
 */

/** A delivery's key: the message the queue carries, everything else read from D1 when it is sent. */
export interface DeliveryKey {
  eventId: string;
  endpointId: string;
}

/** The statements of one kind of event about the rows a condition picks, to run inside a batch. */
export interface EventStatements {
  readonly kind: "events";
  /** Inserts the events; then inserts their deliveries, returning their keys. */
  readonly statements: readonly [BatchItem<"sqlite">, BatchItem<"sqlite">];
}

/**
 * A condition for the events of an update, put right after it in the batch: true when that
 * statement changed a row (SQLite's `changes()` counts the rows the last finished INSERT, UPDATE
 * or DELETE changed, and a batch runs its statements in order on one connection). The update's
 * own condition may no longer hold once it has run, and nothing else tells an update that matched
 * from one that did not.
 */
export const changedJustBefore = sql`changes() > 0`;

/** Whatever batchWithEvents runs: drizzle statements and events. */
export type BatchEntry = BatchItem<"sqlite"> | EventStatements;

/**
 * The columns of a new delivery of the event read from `webhook_events` to `endpointId` (an SQL
 * value or expression), due at once: what an INSERT ... SELECT of deliveries selects. `now` is a
 * time, or a placeholder of one (compiled.ts).
 */
export const newDeliveryOf = (endpointId: SQL, now: unknown) => ({
  eventId: sql<string>`${webhookEvents.id}`.as("event_id"),
  endpointId: sql<string>`${endpointId}`.as("endpoint_id"),
  status: sql<"pending">`'pending'`.as("status"),
  attempts: sql<number>`0`.as("attempts"),
  nextAttemptAt: sql<number>`${now}`.as("next_attempt_at"),
  leaseUntil: sql<null>`NULL`.as("lease_until"),
  createdAt: sql<number>`${now}`.as("created_at"),
  updatedAt: sql<number>`${now}`.as("updated_at"),
});

/** Whether endpoint `ep` (enabled) takes events of the type `type` (an SQL value or expression). */
const takes = (type: SQL) =>
  sql`ep.disabled_at IS NULL
    AND (ep.events IS NULL OR EXISTS (SELECT 1 FROM json_each(ep.events) WHERE json_each.value = ${type}))`;

/** What a kind of event is about: the table, the row's subject, account and id as SQL. */
interface Subjects {
  from: typeof uploads | typeof albums;
  subject: SQL;
  accountId: SQL;
  id: SQL;
}

/**
 * The values of one run of an event's statements: values, or placeholders of them (compiled.ts).
 * Event ids start with `prefix`, random per run, which the deliveries find them by on the primary key.
 */
interface EventValues {
  prefix: unknown;
  /** One event of each type about each row, in this order (their ids sort the same way). */
  types: readonly unknown[];
  now: unknown;
  /** The event's detail as JSON text, or null. */
  detail: unknown;
}

/** The run's types as a table `t`: each type, and its place `n`, which its events' ids carry. */
const typesTable = (types: readonly unknown[]) =>
  sql`(${sql.join(
    types.map((type, n) => sql`SELECT ${sql.raw(`'${n}'`)} AS n, ${type} AS type`),
    sql` UNION ALL `,
  )}) t`;

/**
 * Inserts the events of `v.types` about each row of `table` that `where` picks, when its account
 * has an endpoint taking them.
 */
const insertEvents = (db: Database | StatementWriter, table: Subjects, where: SQL, v: EventValues) =>
  db.insert(webhookEvents).select(
    db
      .select({
        id: sql<string>`${v.prefix} || t.n || ${table.id}`.as("id"),
        accountId: sql<string>`${table.accountId}`.as("account_id"),
        type: sql<string>`t.type`.as("type"),
        subject: sql<string>`${table.subject}`.as("subject"),
        detail: sql<string | null>`${v.detail}`.as("detail"),
        createdAt: sql<number>`${v.now}`.as("created_at"),
      })
      .from(table.from)
      .innerJoin(typesTable(v.types), sql`1`)
      .where(
        and(
          where,
          sql`EXISTS (SELECT 1 FROM webhook_endpoints ep
            WHERE ep.account_id = ${table.accountId} AND ${takes(sql`t.type`)})`,
        ),
      ),
  );

/** Inserts the deliveries of the events insertEvents wrote (found by their prefix), returning their keys. */
const insertDeliveries = (db: Database | StatementWriter, v: EventValues) =>
  db
    .insert(webhookDeliveries)
    .select(
      db
        .select(newDeliveryOf(sql`ep.id`, v.now))
        .from(webhookEvents)
        .innerJoin(sql`webhook_endpoints ep`, sql`ep.account_id = ${webhookEvents.accountId}`)
        .where(
          and(
            gte(webhookEvents.id, sql`${v.prefix}`),
            lt(webhookEvents.id, sql`${v.prefix} || '~'`),
            takes(sql`${webhookEvents.type}`),
          ),
        ),
    )
    // Named as DeliveryKey names them, so that a compiled run's raw rows are its keys too.
    .returning({
      eventId: sql<string>`"event_id"`.as("eventId"),
      endpointId: sql<string>`"endpoint_id"`.as("endpointId"),
    });

/** A new run's values: its own prefix of event ids. */
const valuesOf = (
  types: readonly WebhookEventType[],
  now: number,
  detail: Record<string, unknown> | null,
): EventValues => ({
  prefix: `msg_${randomBase62(12)}`,
  types,
  now,
  detail: detail ? JSON.stringify(detail) : null,
});

/**
 * The events of `type` about each row of `table` that `where` picks (at most one each), and their
 * deliveries to the account's endpoints that take them.
 */
function eventsAbout(
  db: Database,
  table: Subjects,
  type: WebhookEventType,
  where: SQL,
  now: number,
  detail: Record<string, unknown> | null,
): EventStatements {
  const v = valuesOf([type], now, detail);
  return { kind: "events", statements: [insertEvents(db, table, where, v), insertDeliveries(db, v)] };
}

const uploadSubjects = (): Subjects => ({
  from: uploads,
  subject: rowJson(uploads, "uploads"),
  accountId: sql`${uploads.accountId}`,
  id: sql`${uploads.id}`,
});

/** Events about the uploads `where` picks (a condition on `uploads`), as they are at that point of the batch. */
export const uploadEvents = (
  db: Database,
  type: WebhookEventType,
  where: SQL,
  now: number,
  detail: Record<string, unknown> | null = null,
) => eventsAbout(db, uploadSubjects(), type, where, now, detail);

type RunValues = Record<string, unknown>;
/** The names of a run's `count` types among its values. */
const typeNames = (count: number) => Array.from({ length: count }, (_, n) => `type${n}`);
const placeheld = (p: (name: string) => unknown, count: number): EventValues => ({
  prefix: p("prefix"),
  types: typeNames(count).map(p),
  now: p("now"),
  detail: p("detail"),
});
/** Compiled per number of types: an upload made ready in its request has two (created, ready). */
const oneUploadStatements = [1, 2].map((count) => ({
  events: compiled<RunValues>((db, p) =>
    insertEvents(db, uploadSubjects(), eq(uploads.id, p("id")), placeheld(p, count)),
  ),
  deliveries: compiled<RunValues>((db, p) => insertDeliveries(db, placeheld(p, count))),
}));

/**
 * uploadEvents about the one upload `id`, one of each of `types` (one or two), from statements
 * written once per isolate (compiled.ts), in one pair of statements: the events of every upload
 * made, on the hot path of the smallest uploads.
 */
export function oneUploadEvents(
  db: Database,
  types: readonly WebhookEventType[],
  id: string,
  now: number,
): EventStatements {
  const statements = oneUploadStatements[types.length - 1];
  if (!statements) throw new Error(`no statements for ${types.length} event types`);
  const v = valuesOf(types, now, null);
  const values: RunValues = { id, prefix: v.prefix, now: v.now, detail: v.detail };
  typeNames(types.length).forEach((name, n) => {
    values[name] = types[n];
  });
  return { kind: "events", statements: [statements.events(db, values).run(), statements.deliveries(db, values).all()] };
}

/**
 * An album's subject: its row, how many of its uploads are live and its cover if live, as
 * presenting it needs (storage/albums.ts reads the same facts).
 */
const albumSubject = (now: number) => sql`json_object(
  'album', ${rowJson(albums, "albums")},
  'uploadCount', (SELECT count(*) FROM album_uploads au JOIN uploads u ON u.id = au.upload_id
    WHERE au.album_id = "albums"."id" AND (u.expires_at IS NULL OR u.expires_at > ${now})),
  'cover', (SELECT ${rowJson(uploads, "uploads")} FROM uploads
    WHERE "uploads"."id" = "albums"."cover_upload_id"
      AND ("uploads"."expires_at" IS NULL OR "uploads"."expires_at" > ${now})))`;

/** Events about the albums `where` picks (a condition on `albums`). */
export const albumEvents = (db: Database, type: WebhookEventType, where: SQL, now: number) =>
  eventsAbout(
    db,
    { from: albums, subject: albumSubject(now), accountId: sql`${albums.accountId}`, id: sql`${albums.id}` },
    type,
    where,
    now,
    null,
  );

const isEvents = (item: BatchEntry): item is EventStatements => (item as EventStatements).kind === "events";

/** Where new deliveries are announced (the delivery queue), once their change has committed. */
export interface DeliveryQueue {
  sendBatch(messages: Iterable<MessageSendRequest<DeliveryKey>>): Promise<unknown>;
}

/**
 * Runs `items` (statements and events among them, in order) as one batch, then hands the new
 * deliveries to the queue. Answers each item's result: a statement's as drizzle gives it, an
 * event's the keys of its deliveries. A queue that cannot be reached loses nothing: the relay
 * (webhooks' cron sweep) sends what was never sent.
 */
export async function batchWithEvents(
  deps: { db: Database; deliveries: DeliveryQueue },
  items: readonly BatchEntry[],
): Promise<unknown[]> {
  const flat = items.flatMap((item) => (isEvents(item) ? [...item.statements] : [item]));
  const [first, ...rest] = flat;
  if (!first) return [];
  const results = await deps.db.batch([first, ...rest]);
  const answers: unknown[] = [];
  const keys: DeliveryKey[] = [];
  let at = 0;
  for (const item of items) {
    if (isEvents(item)) {
      const delivered = results[at + 1] as DeliveryKey[];
      keys.push(...delivered);
      answers.push(delivered);
      at += 2;
    } else {
      answers.push(results[at]);
      at += 1;
    }
  }
  await announceDeliveries(deps.deliveries, keys);
  return answers;
}

/** Messages the queue takes in one call (Cloudflare Queues: 100 per sendBatch). */
const SEND_BATCH = 100;

/** Hands deliveries to the queue; a failure is logged, and the relay sends them later. */
export async function announceDeliveries(queue: DeliveryQueue, keys: readonly DeliveryKey[]) {
  for (let i = 0; i < keys.length; i += SEND_BATCH) {
    const messages = keys.slice(i, i + SEND_BATCH).map((body) => ({ body, contentType: "json" as const }));
    await queue.sendBatch(messages).catch((error) => {
      console.error(JSON.stringify({ webhookDeliveries: messages.length, queueSend: String(error) }));
    });
  }
}
