import { and, eq, isNotNull, isNull, lt, lte, or, sql } from "drizzle-orm";
import {
  webhookAttempts,
  webhookDeliveries,
  webhookEndpoints,
  webhookEvents,
  type WebhookAttemptRow,
  type WebhookDeliveryRow,
} from "../model/webhook-schema";
import type { Database } from "./db";
import type { DeliveryKey } from "./webhook-outbox";

/*
 * D1 queries of webhook deliveries: an attempt claimed under a lease, its outcome recorded with
 * the endpoint's health and the attempt's record in one batch, and the relay's and sweeps' reads.
 */

const keyIs = (key: DeliveryKey) =>
  and(eq(webhookDeliveries.eventId, key.eventId), eq(webhookDeliveries.endpointId, key.endpointId))!;

export interface ClaimRules {
  leaseMs: number;
  inFlight: number;
}

/**
 * Takes the delivery's next attempt if it is pending, due, held by no one, and its endpoint has
 * fewer than `inFlight` attempts held: one conditional UPDATE, so two consumers never send the
 * same attempt nor pass the endpoint's bound together. Read with it, in the same batch: the
 * delivery as it now is, its event and its endpoint.
 */
export async function claimDelivery(db: Database, key: DeliveryKey, now: number, rules: ClaimRules) {
  const heldForEndpoint = sql`(SELECT count(*) FROM webhook_deliveries d2
    WHERE d2.endpoint_id = ${key.endpointId} AND d2.lease_until > ${now})`;
  const [claimed, [delivery], [event], [endpoint]] = await db.batch([
    db
      .update(webhookDeliveries)
      .set({ attempts: sql`${webhookDeliveries.attempts} + 1`, leaseUntil: now + rules.leaseMs, updatedAt: now })
      .where(
        and(
          keyIs(key),
          eq(webhookDeliveries.status, "pending"),
          lte(webhookDeliveries.nextAttemptAt, now),
          or(isNull(webhookDeliveries.leaseUntil), lt(webhookDeliveries.leaseUntil, now)),
          sql`${heldForEndpoint} < ${rules.inFlight}`,
        ),
      )
      .returning(),
    db.select().from(webhookDeliveries).where(keyIs(key)),
    db.select().from(webhookEvents).where(eq(webhookEvents.id, key.eventId)),
    db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, key.endpointId)),
  ]);
  return { claimed: claimed[0] ?? null, delivery: delivery ?? null, event: event ?? null, endpoint: endpoint ?? null };
}

export interface AttemptOutcome {
  /** The attempt as recorded for the endpoint's listing. */
  record: Omit<WebhookAttemptRow, "id">;
  /** delivered, failed (for good), or pending again until `nextAttemptAt`. */
  status: WebhookDeliveryRow["status"];
  nextAttemptAt: number | null;
  /** Whether the receiver took it (a 2xx). */
  succeeded: boolean;
}

/**
 * Writes an attempt's outcome, if its consumer still holds it (the attempt count it claimed):
 * the delivery's state, the attempt's record (with `prune`, only the endpoint's last `keep` kept), and the
 * endpoint's health — failing since its first failure after a success, disabled once that is
 * `disableAfterMs` old, with the reason. One batch.
 */
export async function recordAttempt(
  db: Database,
  claimed: WebhookDeliveryRow,
  outcome: AttemptOutcome,
  now: number,
  rules: { keep: number; prune: boolean; disableAfterMs: number },
) {
  const { endpointId } = claimed;
  const failingSince = sql`coalesce(${webhookEndpoints.failingSince}, ${now})`;
  const disabling = sql`${failingSince} <= ${now - rules.disableAfterMs}`;
  const reason = `Every delivery failed for ${Math.round(rules.disableAfterMs / 86_400_000)} days; the last: ${
    outcome.record.error ?? `HTTP ${outcome.record.statusCode}`
  }`;
  const health = outcome.succeeded
    ? { failingSince: null }
    : {
        failingSince,
        disabledAt: sql`CASE WHEN ${disabling} AND ${webhookEndpoints.disabledAt} IS NULL
          THEN ${now} ELSE ${webhookEndpoints.disabledAt} END`,
        disabledReason: sql`CASE WHEN ${disabling} AND ${webhookEndpoints.disabledAt} IS NULL
          THEN ${reason} ELSE ${webhookEndpoints.disabledReason} END`,
      };
  await db.batch([
    db
      .update(webhookDeliveries)
      .set({
        status: outcome.status,
        nextAttemptAt: outcome.nextAttemptAt ?? claimed.nextAttemptAt,
        leaseUntil: null,
        updatedAt: now,
      })
      .where(and(keyIs(claimed), eq(webhookDeliveries.attempts, claimed.attempts))),
    db.insert(webhookAttempts).values(outcome.record),
    // Older records are pruned on some attempts only: finding them reads the endpoint's records.
    ...(rules.prune
      ? [
          db.delete(webhookAttempts).where(
            and(
              eq(webhookAttempts.endpointId, endpointId),
              sql`${webhookAttempts.id} <= (SELECT id FROM webhook_attempts WHERE endpoint_id = ${endpointId}
                ORDER BY id DESC LIMIT 1 OFFSET ${rules.keep})`,
            ),
          ),
        ]
      : []),
    db
      .update(webhookEndpoints)
      .set(health)
      // A success writes the endpoint only to end a failing spell.
      .where(
        and(
          eq(webhookEndpoints.id, endpointId),
          outcome.succeeded ? isNotNull(webhookEndpoints.failingSince) : undefined,
        ),
      ),
  ]);
}

/**
 * Ends a delivery without an attempt (its event or endpoint gone, or the endpoint disabled); with
 * `madeBefore`, only one made before then.
 */
export async function endDelivery(
  db: Database,
  key: DeliveryKey,
  status: "failed" | "dropped",
  now: number,
  madeBefore?: number,
) {
  await db
    .update(webhookDeliveries)
    .set({ status, leaseUntil: null, updatedAt: now })
    .where(
      and(
        keyIs(key),
        eq(webhookDeliveries.status, "pending"),
        madeBefore === undefined ? undefined : lt(webhookDeliveries.createdAt, madeBefore),
      ),
    );
}

/**
 * What the relay reads, in one round trip: pending deliveries overdue by `graceMs` and unheld
 * (their message was lost, or never sent), the oldest first, `limit` at most; and the failing
 * endpoints holding more than `cap` pending deliveries (only failing ones gather a backlog). The
 * events made before `forgetBefore` are forgotten in the same batch, `purgeLimit` at most, with
 * their deliveries (the foreign key's cascade).
 */
export async function relayReads(
  db: Database,
  now: number,
  rules: { graceMs: number; limit: number; cap: number; forgetBefore: number; purgeLimit: number },
) {
  // The events forgotten in this run, oldest first: the same rows for the count and the delete.
  const forgotten = sql`(SELECT id FROM webhook_events WHERE created_at < ${rules.forgetBefore}
    ORDER BY created_at LIMIT ${rules.purgeLimit})`;
  const [overdue, over] = await db.batch([
    db
      .select({ eventId: webhookDeliveries.eventId, endpointId: webhookDeliveries.endpointId })
      .from(webhookDeliveries)
      .where(
        and(
          eq(webhookDeliveries.status, "pending"),
          lt(webhookDeliveries.nextAttemptAt, now - rules.graceMs),
          or(isNull(webhookDeliveries.leaseUntil), lt(webhookDeliveries.leaseUntil, now)),
          // An endpoint with attempts in flight has messages moving: its waiting deliveries are not lost.
          sql`NOT EXISTS (SELECT 1 FROM webhook_deliveries d2
            WHERE d2.endpoint_id = ${webhookDeliveries.endpointId} AND d2.lease_until > ${now})`,
        ),
      )
      .orderBy(webhookDeliveries.nextAttemptAt)
      .limit(rules.limit),
    db
      .select({
        id: webhookEndpoints.id,
        pending: sql<number>`(SELECT count(*) FROM webhook_deliveries d
          WHERE d.endpoint_id = ${webhookEndpoints.id} AND d.status = 'pending')`,
      })
      .from(webhookEndpoints)
      .where(
        and(
          // Endpoints that fail, or are slow enough to hold attempts now: only they gather a backlog.
          sql`(${isNotNull(webhookEndpoints.failingSince)} OR ${webhookEndpoints.id} IN (SELECT d.endpoint_id
            FROM webhook_deliveries d WHERE d.lease_until > ${now}))`,
          sql`(SELECT count(*) FROM webhook_deliveries d
            WHERE d.endpoint_id = ${webhookEndpoints.id} AND d.status = 'pending') > ${rules.cap}`,
        ),
      ),
    // A delivery still pending when its event is forgotten is dropped, and counted on its endpoint.
    db
      .update(webhookEndpoints)
      .set({
        droppedEvents: sql`${webhookEndpoints.droppedEvents} + (SELECT count(*) FROM webhook_deliveries d
          WHERE d.endpoint_id = ${webhookEndpoints.id} AND d.status = 'pending' AND d.event_id IN ${forgotten})`,
      })
      .where(
        sql`${webhookEndpoints.id} IN (SELECT d.endpoint_id FROM webhook_deliveries d
          WHERE d.status = 'pending' AND d.event_id IN ${forgotten})`,
      ),
    db.delete(webhookEvents).where(sql`${webhookEvents.id} IN ${forgotten}`),
  ]);
  return { overdue, overBacklog: over };
}

/** Drops, oldest first, what each endpoint holds past `cap` of pending deliveries, and counts them on it. */
export async function dropOverflow(
  db: Database,
  endpoints: readonly { id: string; pending: number }[],
  cap: number,
  now: number,
) {
  const statements = endpoints.flatMap((endpoint) => {
    const excess = endpoint.pending - cap;
    return [
      db
        .update(webhookDeliveries)
        .set({ status: "dropped", updatedAt: now })
        .where(
          sql`(event_id, endpoint_id) IN (SELECT event_id, endpoint_id FROM webhook_deliveries
            WHERE endpoint_id = ${endpoint.id} AND status = 'pending' ORDER BY created_at LIMIT ${excess})`,
        ),
      db
        .update(webhookEndpoints)
        .set({ droppedEvents: sql`${webhookEndpoints.droppedEvents} + ${excess}` })
        .where(eq(webhookEndpoints.id, endpoint.id)),
    ];
  });
  const [first, ...rest] = statements;
  if (first) await db.batch([first, ...rest]);
}
