import { describeRoute } from "hono-openapi";
import { error, json, throttled } from "../openapi/answers";
import { fieldsBody } from "../openapi/requests";
import {
  attemptListResponseSchema,
  endpointChangeBody,
  endpointCreateBody,
  endpointListResponseSchema,
  endpointResponseSchema,
  endpointSecretResponseSchema,
  PREVIOUS_SECRET_HOURS,
  testEventResponseSchema,
} from "./schemas";
import { deleteResponseSchema } from "../../uploads/schemas/resources";
import { MAX_ENDPOINTS_PER_ACCOUNT } from "../../webhooks/endpoints";
import { ATTEMPTS_KEPT } from "../../webhooks/schedule";

/** What each webhook endpoint operation (index.ts) is documented as; see uploads/openapi.ts. */

const fullKey = error("Missing or invalid key, or the upload-only key (webhooks are managed with the full key).");
const noSuchEndpoint = error("No webhook endpoint with that id on this account.");
const badUrl = "Invalid field, or a URL refused (not https, credentials, or an address that is not public).";

export const describeWebhookCreate = describeRoute({
  summary: "Create a webhook endpoint",
  operationId: "createWebhookEndpoint",
  description:
    "Extension. The account's events are sent to `url`, signed as Standard Webhooks signs them (docs/api.md, " +
    '"Webhooks"). The answer carries the endpoint\'s signing secret, which is never shown again. At most ' +
    `${MAX_ENDPOINTS_PER_ACCOUNT} endpoints an account.`,
  requestBody: fieldsBody(endpointCreateBody),
  responses: {
    200: json(endpointSecretResponseSchema, "The new endpoint, enabled, and its secret."),
    401: fullKey,
    409: error(`The account already has ${MAX_ENDPOINTS_PER_ACCOUNT} endpoints.`),
    422: error(badUrl),
    429: throttled,
  },
});

export const describeWebhookList = describeRoute({
  summary: "List webhook endpoints, newest first",
  operationId: "listWebhookEndpoints",
  description: "Extension. Every endpoint of the account, disabled ones with why; never their secrets.",
  responses: { 200: json(endpointListResponseSchema), 401: fullKey, 429: throttled },
});

export const describeWebhookGet = describeRoute({
  summary: "Read one webhook endpoint",
  operationId: "getWebhookEndpoint",
  description: "Extension. Never its secret.",
  responses: { 200: json(endpointResponseSchema), 401: fullKey, 404: noSuchEndpoint, 429: throttled },
});

export const describeWebhookChange = describeRoute({
  summary: "Change a webhook endpoint",
  operationId: "changeWebhookEndpoint",
  description:
    "Extension. Only the fields sent change; a new `url` is checked as at creation. `enabled` disables the " +
    "endpoint or enables it again.",
  requestBody: fieldsBody(endpointChangeBody),
  responses: {
    200: json(endpointResponseSchema, "The endpoint as it now is."),
    401: fullKey,
    404: noSuchEndpoint,
    422: error(badUrl),
    429: throttled,
  },
});

export const describeWebhookDelete = describeRoute({
  summary: "Delete a webhook endpoint",
  operationId: "deleteWebhookEndpoint",
  description: "Extension. Its pending deliveries are never sent, and its attempts are forgotten.",
  responses: { 200: json(deleteResponseSchema), 401: fullKey, 404: noSuchEndpoint, 429: throttled },
});

export const describeWebhookRotate = describeRoute({
  summary: "Rotate a webhook endpoint's secret",
  operationId: "rotateWebhookSecret",
  description:
    "Extension. A new secret, shown only in this answer. For the next " +
    `${PREVIOUS_SECRET_HOURS} hours every delivery carries two signatures, by the new secret and the old one, ` +
    "so a receiver can move to the new secret in that time.",
  responses: {
    200: json(endpointSecretResponseSchema, "The endpoint and its new secret."),
    401: fullKey,
    404: noSuchEndpoint,
    429: throttled,
  },
});

export const describeWebhookTest = describeRoute({
  summary: "Send a test event to a webhook endpoint",
  operationId: "testWebhookEndpoint",
  description:
    "Extension. A `webhook.test` event, to this endpoint only, delivered and retried as any event is; its " +
    "attempts are in the endpoint's deliveries.",
  responses: {
    202: json(testEventResponseSchema, "The event is queued."),
    401: fullKey,
    404: noSuchEndpoint,
    409: error("The endpoint is disabled."),
    429: throttled,
  },
});

export const describeWebhookDeliveries = describeRoute({
  summary: "List a webhook endpoint's last delivery attempts",
  operationId: "listWebhookDeliveries",
  description: `Extension. The last ${ATTEMPTS_KEPT} attempts, newest first.`,
  responses: { 200: json(attemptListResponseSchema), 401: fullKey, 404: noSuchEndpoint, 429: throttled },
});
