import { and, desc, eq, sql } from "drizzle-orm";
import {
  webhookAttempts,
  webhookDeliveries,
  webhookEndpoints,
  webhookEvents,
  type WebhookAttemptRow,
  type WebhookEndpointRow,
} from "../model/webhook-schema";
import type { Database } from "./db";
import { newDeliveryOf, type DeliveryKey } from "./webhook-outbox";

/**
 * D1 queries of an account's webhook endpoints (`webhook_endpoints`) and what the API reads of
 * their deliveries (`webhook_attempts`). Every query names the account: another account's
 * endpoint is found nowhere, exactly like one that does not exist. Deleting an endpoint deletes
 * its deliveries and attempts (the foreign keys' cascade).
 */

export type NewEndpointRow = typeof webhookEndpoints.$inferInsert;
export type EndpointPatch = Partial<
  Pick<
    WebhookEndpointRow,
    "url" | "description" | "events" | "origin" | "disabledAt" | "disabledReason" | "failingSince"
  >
>;

const owned = (accountId: string, id: string) =>
  and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.accountId, accountId));

/**
 * Inserts the endpoint unless its account already has `max`: the count and the insert are one
 * statement, so two creates at once cannot both pass the bound. Whether it was inserted.
 */
export async function insertEndpointWithin(db: Database, row: NewEndpointRow, max: number): Promise<boolean> {
  const columns = Object.keys(row) as (keyof NewEndpointRow)[];
  const values = sql.join(
    columns.map((key) => sql`${row[key] ?? null}`),
    sql.raw(", "),
  );
  const names = sql.raw(columns.map((key) => `"${webhookEndpoints[key].name}"`).join(", "));
  const result = await db.run(
    sql`INSERT INTO webhook_endpoints (${names}) SELECT ${values}
      WHERE (SELECT count(*) FROM webhook_endpoints WHERE account_id = ${row.accountId}) < ${max}`,
  );
  return result.meta.changes > 0;
}

/** The account's endpoints, newest first (an account has a few at most). */
export function endpointsOf(db: Database, accountId: string): Promise<WebhookEndpointRow[]> {
  return db
    .select()
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.accountId, accountId))
    .orderBy(desc(webhookEndpoints.createdAt), desc(webhookEndpoints.id));
}

export function findOwnedEndpoint(db: Database, accountId: string, id: string) {
  return db.select().from(webhookEndpoints).where(owned(accountId, id)).get();
}

/** Changes the account's endpoint, returning it as it now is (undefined: no such endpoint of the account). */
export async function updateEndpoint(db: Database, accountId: string, id: string, patch: EndpointPatch, now: number) {
  const [row] = await db
    .update(webhookEndpoints)
    .set({ ...patch, updatedAt: now })
    .where(owned(accountId, id))
    .returning();
  return row;
}

/**
 * Gives the endpoint a new secret; the one it had signs beside it until `previousUntil` (SQLite's
 * UPDATE reads the row as it was, so the old secret moves in the same statement).
 */
export async function rotateEndpointSecret(
  db: Database,
  accountId: string,
  id: string,
  change: { secret: string; previousUntil: number; now: number },
) {
  const [row] = await db
    .update(webhookEndpoints)
    .set({
      previousSecret: sql`${webhookEndpoints.secret}`,
      previousSecretUntil: change.previousUntil,
      secret: change.secret,
      updatedAt: change.now,
    })
    .where(owned(accountId, id))
    .returning();
  return row;
}

/** Deletes the account's endpoint, with its deliveries and attempts; whether there was one. */
export async function deleteEndpoint(db: Database, accountId: string, id: string) {
  const [row] = await db.delete(webhookEndpoints).where(owned(accountId, id)).returning({ id: webhookEndpoints.id });
  return !!row;
}

/**
 * One event for the endpoint alone and its one delivery, due now, in one batch; both only if the
 * account's endpoint exists and is enabled at that moment. The delivery's key, or null when not.
 */
export async function insertEndpointEvent(
  db: Database,
  accountId: string,
  endpointId: string,
  event: { id: string; type: string; subject: string; now: number },
): Promise<DeliveryKey | null> {
  const enabled = and(owned(accountId, endpointId), sql`${webhookEndpoints.disabledAt} IS NULL`);
  const { id, type, subject, now } = event;
  const [, delivered] = await db.batch([
    db.insert(webhookEvents).select(
      db
        .select({
          id: sql<string>`${id}`.as("id"),
          accountId: webhookEndpoints.accountId,
          type: sql<string>`${type}`.as("type"),
          subject: sql<string>`${subject}`.as("subject"),
          detail: sql<null>`NULL`.as("detail"),
          createdAt: sql<number>`${now}`.as("created_at"),
        })
        .from(webhookEndpoints)
        .where(enabled),
    ),
    db
      .insert(webhookDeliveries)
      .select(
        db
          .select(newDeliveryOf(sql`${endpointId}`, now))
          .from(webhookEvents)
          .where(eq(webhookEvents.id, id)),
      )
      .returning({ eventId: webhookDeliveries.eventId, endpointId: webhookDeliveries.endpointId }),
  ]);
  return delivered[0] ?? null;
}

/** The endpoint's last `limit` attempts, newest first. */
export function recentAttempts(db: Database, endpointId: string, limit: number): Promise<WebhookAttemptRow[]> {
  return db
    .select()
    .from(webhookAttempts)
    .where(eq(webhookAttempts.endpointId, endpointId))
    .orderBy(desc(webhookAttempts.id))
    .limit(limit);
}
