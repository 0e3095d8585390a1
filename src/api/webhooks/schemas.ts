import { z } from "zod";
import { DESCRIPTION_MAX } from "../../model/spec-limits";
import { WEBHOOK_EVENT_TYPES } from "../../model/webhook-events";
import { booleanField, clearableText } from "../../uploads/schemas/fields";
import { timestamp } from "../../uploads/schemas/resources";
import { ATTEMPTS_KEPT } from "../../webhooks/schedule";
import { ENDPOINT_URL_MAX } from "../../webhooks/endpoint-url";
import { MAX_ENDPOINTS_PER_ACCOUNT, PREVIOUS_SECRET_MS } from "../../webhooks/endpoints";

/** The webhook endpoints' requests and answers (extension). */

const eventType = z.enum(WEBHOOK_EVENT_TYPES, { message: `must be among ${WEBHOOK_EVENT_TYPES.join(", ")}` });

/** Every type ("*", or null), or a list: an array, or in a form the types separated by commas or spaces. */
const eventsField = z
  .union([
    z.literal("*").transform(() => null),
    z.null(),
    z.array(z.string()),
    z
      .string()
      .max(1000)
      .transform((s) => (s.trim() === "*" ? null : s.split(/[\s,]+/).filter(Boolean))),
  ])
  .pipe(z.array(eventType).min(1, { message: 'must name at least one event type, or be "*" for all' }).nullable())
  .meta({
    description:
      `The event types sent to the endpoint: a list of ${WEBHOOK_EVENT_TYPES.join(", ")}; or "*" (or null) ` +
      "for all of them, the default. In a form, the types separated by commas.",
  });

const urlField = z
  .string({ message: "must be the URL to send events to" })
  .trim()
  .min(1, { message: "must be the URL to send events to" })
  .meta({
    description:
      `Where events are sent (POST): an https URL, at most ${ENDPOINT_URL_MAX} characters, without a user name ` +
      "or password, whose host resolves to public addresses only (as `url` uploads' links).",
  });

const descriptionField = clearableText("Description", DESCRIPTION_MAX);

/** POST /api/webhooks. */
export const endpointCreateBody = z.object({
  url: urlField,
  events: eventsField.optional(),
  description: descriptionField.optional(),
});

/** PATCH /api/webhooks/{id}: only the fields sent change. */
export const endpointChangeBody = z.object({
  url: urlField.optional(),
  events: eventsField.optional(),
  description: descriptionField.optional(),
  enabled: booleanField.optional().meta({
    description:
      "false disables the endpoint (nothing is sent to it); true enables it again, whether it was disabled " +
      "here or after failing, and forgets since when it was failing.",
  }),
});

export const webhookEndpointSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    description: z.string().nullable(),
    events: z.union([z.literal("*"), z.array(eventType)]).meta({ description: '"*": every event type.' }),
    enabled: z.boolean(),
    disabled_at: timestamp.nullable(),
    disabled_reason: z
      .string()
      .nullable()
      .meta({ description: "Why it was disabled: by hand, or failing for 5 days." }),
    failing_since: timestamp.nullable().meta({ description: "Since when every attempt has failed; null if none has." }),
    dropped_events: z.number().int().meta({
      description: "Deliveries dropped, oldest first, because more were pending than an endpoint may hold.",
    }),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: "WebhookEndpoint" });

const secretField = z.string().meta({
  description: "The signing secret (`whsec_` and base64), for Standard Webhooks' verify. Shown only in this answer.",
});

/** GET and PATCH of one endpoint: the endpoint as it now is. */
export const endpointResponseSchema = z
  .object({ type: z.literal("success"), msg: z.literal("success"), data: webhookEndpointSchema })
  .meta({ id: "WebhookEndpointResponse" });

/** POST /api/webhooks and the rotation: the endpoint, and its secret this once. */
export const endpointSecretResponseSchema = z
  .object({
    type: z.literal("success"),
    msg: z.literal("success"),
    data: webhookEndpointSchema.extend({ secret: secretField }),
  })
  .meta({ id: "WebhookEndpointWithSecretResponse" });

export const endpointListResponseSchema = z
  .object({
    type: z.literal("success"),
    data: z.array(webhookEndpointSchema).max(MAX_ENDPOINTS_PER_ACCOUNT),
  })
  .meta({ id: "WebhookEndpointListResponse" });

export const testEventResponseSchema = z
  .object({
    type: z.literal("success"),
    msg: z.literal("Queued."),
    data: z.object({ event_id: z.string().meta({ description: "The event's id, sent as `webhook-id`." }) }),
  })
  .meta({ id: "WebhookTestResponse" });

const attemptSchema = z
  .object({
    event_id: z.string(),
    type: z.string(),
    attempt: z.number().int().meta({ description: "1 for the first attempt." }),
    status_code: z.number().int().nullable().meta({ description: "The receiver's status; null when none came." }),
    error: z.string().nullable(),
    duration_ms: z.number().int(),
    next_retry_at: timestamp.nullable().meta({ description: "When it is tried again; null: it will not be." }),
    response: z.string().nullable().meta({ description: "At most 1 KiB of the receiver's answer." }),
    created_at: timestamp,
  })
  .meta({ id: "WebhookAttempt" });

export const attemptListResponseSchema = z
  .object({ type: z.literal("success"), data: z.array(attemptSchema).max(ATTEMPTS_KEPT) })
  .meta({ id: "WebhookAttemptListResponse" });

/** How long a rotated-out secret keeps signing, in the descriptions' words. */
export const PREVIOUS_SECRET_HOURS = PREVIOUS_SECRET_MS / 3_600_000;
