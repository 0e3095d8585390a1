import { randomBase62 } from "../crypto";
import { ApiError, notFound } from "../errors";
import type { WEBHOOK_EVENT_TYPES } from "../model/webhook-events";
import type { WebhookEndpointRow } from "../model/webhook-schema";
import {
  deleteEndpoint,
  endpointsOf,
  findOwnedEndpoint,
  insertEndpointWithin,
  rotateEndpointSecret,
  updateEndpoint,
  type EndpointPatch,
} from "../storage/webhook-endpoints";
import type { Stores } from "../storage/stores";
import { isoTimestamp } from "../time";
import { checkEndpointUrl, type UrlRule } from "./endpoint-url";
import { newSecret } from "./signing";

/**
 * An account's webhook endpoints (extension): where its events are sent, each signed with the
 * endpoint's own secret. Everything here is the owner's: another account's endpoint is a 404,
 * exactly like one that does not exist.
 */

/** What managing endpoints needs: the stores, and the address rule of link uploads for their URLs. */
export type EndpointDeps = Stores & UrlRule;

/** Endpoints an account may have: each event is written once per endpoint that takes it. */
export const MAX_ENDPOINTS_PER_ACCOUNT = 10;
/** How long a rotated-out secret keeps signing beside the new one (Standard Webhooks' two signatures). */
export const PREVIOUS_SECRET_MS = 24 * 60 * 60 * 1000;
/** Why an endpoint disabled through the API is (the delivery's own reasons say why it gave up). */
export const DISABLED_BY_HAND = "Disabled through the API.";

/** A type an endpoint may take (webhook.test is sent only when asked for). */
export type SubscribableType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** What a create or a change may set; `undefined` leaves a field as it is. */
export interface EndpointFields {
  url?: string;
  /** null: every event type. */
  events?: readonly SubscribableType[] | null;
  description?: string | null;
  enabled?: boolean;
}

export const newEndpointId = () => `ep_${randomBase62(16)}`;

/** The endpoint as the API answers it; never its secret, which only a create or a rotation shows. */
export function presentEndpoint(row: WebhookEndpointRow) {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: row.events === null ? ("*" as const) : (JSON.parse(row.events) as SubscribableType[]),
    enabled: row.disabledAt === null,
    disabled_at: row.disabledAt === null ? null : isoTimestamp(row.disabledAt),
    disabled_reason: row.disabledReason,
    failing_since: row.failingSince === null ? null : isoTimestamp(row.failingSince),
    dropped_events: row.droppedEvents,
    created_at: isoTimestamp(row.createdAt),
    updated_at: isoTimestamp(row.updatedAt),
  };
}

const noSuchEndpoint = () => notFound("No webhook endpoint with that id on this account.");

/** Each type once, in the order given; null for every type. */
const eventsColumn = (events: readonly SubscribableType[] | null) =>
  events === null ? null : JSON.stringify([...new Set(events)]);

export async function getOwnedEndpoint(deps: Stores, accountId: string, id: string): Promise<WebhookEndpointRow> {
  const row = await findOwnedEndpoint(deps.db, accountId, id);
  if (!row) throw noSuchEndpoint();
  return row;
}

export const listEndpoints = (deps: Stores, accountId: string) => endpointsOf(deps.db, accountId);

/**
 * A new endpoint, enabled, and its secret (answered this once). `origin` is the API's origin as
 * the request reached it: the links in the endpoint's payloads are built from it.
 */
export async function createEndpoint(
  deps: EndpointDeps,
  accountId: string,
  origin: string,
  fields: EndpointFields & { url: string },
) {
  const now = deps.now();
  const row: WebhookEndpointRow = {
    id: newEndpointId(),
    accountId,
    url: await checkEndpointUrl(deps, fields.url),
    description: fields.description ?? null,
    events: eventsColumn(fields.events ?? null),
    secret: newSecret(),
    previousSecret: null,
    previousSecretUntil: null,
    origin,
    failingSince: null,
    disabledAt: null,
    disabledReason: null,
    droppedEvents: 0,
    createdAt: now,
    updatedAt: now,
  };
  if (!(await insertEndpointWithin(deps.db, row, MAX_ENDPOINTS_PER_ACCOUNT)))
    throw new ApiError(409, `An account may have at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints.`);
  return { endpoint: row, secret: row.secret };
}

/** The columns a change sets: a new URL checked as at creation; enabling clears why it was disabled. */
async function patchOf(deps: EndpointDeps, current: WebhookEndpointRow, fields: EndpointFields) {
  const patch: EndpointPatch = {};
  if (fields.url !== undefined) patch.url = await checkEndpointUrl(deps, fields.url);
  if (fields.events !== undefined) patch.events = eventsColumn(fields.events);
  if (fields.description !== undefined) patch.description = fields.description;
  if (fields.enabled === true) Object.assign(patch, { disabledAt: null, disabledReason: null, failingSince: null });
  if (fields.enabled === false && current.disabledAt === null)
    Object.assign(patch, { disabledAt: deps.now(), disabledReason: DISABLED_BY_HAND });
  return patch;
}

/** Changes the account's endpoint (only the fields given), answering it as it now is. */
export async function changeEndpoint(deps: EndpointDeps, accountId: string, id: string, fields: EndpointFields) {
  const current = await getOwnedEndpoint(deps, accountId, id);
  const row = await updateEndpoint(deps.db, accountId, id, await patchOf(deps, current, fields), deps.now());
  if (!row) throw noSuchEndpoint();
  return row;
}

/** Deletes the account's endpoint, its deliveries and their attempts; pending ones are never sent. */
export async function removeEndpoint(deps: Stores, accountId: string, id: string) {
  if (!(await deleteEndpoint(deps.db, accountId, id))) throw noSuchEndpoint();
}

/** A new secret, answered this once; the old one keeps signing beside it for PREVIOUS_SECRET_MS. */
export async function rotateSecret(deps: Stores, accountId: string, id: string) {
  const now = deps.now();
  const secret = newSecret();
  const row = await rotateEndpointSecret(deps.db, accountId, id, {
    secret,
    previousUntil: now + PREVIOUS_SECRET_MS,
    now,
  });
  if (!row) throw noSuchEndpoint();
  return { endpoint: row, secret };
}
