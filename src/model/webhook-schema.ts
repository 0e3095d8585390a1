import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { accounts } from "./schema";

/** Timestamps are Unix milliseconds (UTC), as in schema.ts. */

/** An account's webhook endpoint: a URL that is sent the account's events, signed with its secret. */
export const webhookEndpoints = sqliteTable(
  "webhook_endpoints",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    description: text("description"),
    /** A JSON array of the event types it is sent; null: every type. */
    events: text("events"),
    /** The Standard Webhooks secret (`whsec_` and base64 of its bytes); shown once, at creation and rotation. */
    secret: text("secret").notNull(),
    /** The secret before the last rotation, which signs beside the new one until `previous_secret_until`. */
    previousSecret: text("previous_secret"),
    previousSecretUntil: integer("previous_secret_until"),
    /** The origin the endpoint was made through: the links in its payloads are the API's links from there. */
    origin: text("origin").notNull(),
    /** Since when every attempt has failed (null: the last one succeeded, or none was made). */
    failingSince: integer("failing_since"),
    disabledAt: integer("disabled_at"),
    disabledReason: text("disabled_reason"),
    /** Deliveries dropped, oldest first, when more were pending than an endpoint may hold. */
    droppedEvents: integer("dropped_events").notNull().default(0),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [index("webhook_endpoints_account").on(t.accountId, t.createdAt)],
);

export type WebhookEndpointRow = typeof webhookEndpoints.$inferSelect;

/**
 * The outbox: an event, written in the same batch as the change it reports, and only when the
 * account has an endpoint that takes it. `subject` is the upload's or album's row as it was at the
 * event (JSON, captured by the statement itself), presented as the API answers it when sent.
 */
export const webhookEvents = sqliteTable(
  "webhook_events",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    type: text("type").notNull(),
    subject: text("subject").notNull(),
    /** What more the event says (an upload.deleted's `deleted_by`), as JSON; null for nothing. */
    detail: text("detail"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("webhook_events_created").on(t.createdAt)],
);

export type WebhookEventRow = typeof webhookEvents.$inferSelect;

export const DELIVERY_STATUSES = ["pending", "delivered", "failed", "dropped"] as const;

/** One event to one endpoint: at least once, retried on a schedule, a lease held while sending. */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    eventId: text("event_id")
      .notNull()
      .references(() => webhookEvents.id, { onDelete: "cascade" }),
    endpointId: text("endpoint_id")
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    status: text("status", { enum: DELIVERY_STATUSES }).notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    /** When its next attempt is due; the relay re-sends a message for one long overdue. */
    nextAttemptAt: integer("next_attempt_at").notNull(),
    /** While an attempt is being sent: when another consumer may take it over. */
    leaseUntil: integer("lease_until"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.eventId, t.endpointId] }),
    index("webhook_deliveries_endpoint").on(t.endpointId, t.status, t.createdAt),
    index("webhook_deliveries_due").on(t.nextAttemptAt).where(sql`status = 'pending'`),
    index("webhook_deliveries_leased").on(t.endpointId, t.leaseUntil).where(sql`lease_until IS NOT NULL`),
  ],
);

export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;

/** Every attempt, the last 100 of each endpoint (GET /api/webhooks/{id}/deliveries). */
export const webhookAttempts = sqliteTable(
  "webhook_attempts",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    endpointId: text("endpoint_id")
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    eventId: text("event_id").notNull(),
    type: text("type").notNull(),
    attempt: integer("attempt").notNull(),
    /** The receiver's HTTP status; null when none came (no connection, a timeout, a refused address). */
    statusCode: integer("status_code"),
    error: text("error"),
    durationMs: integer("duration_ms").notNull(),
    nextRetryAt: integer("next_retry_at"),
    /** At most 1 KiB of the receiver's answer. */
    response: text("response"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("webhook_attempts_endpoint").on(t.endpointId, t.id)],
);

export type WebhookAttemptRow = typeof webhookAttempts.$inferSelect;
