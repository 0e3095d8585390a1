import type { Context } from "hono";
import { endpointDeps, requestStores } from "../../deps";
import type { AppEnv } from "../../env";
import { parseOrThrow } from "../../errors";
import { identifyCaller, requireKey } from "../../http/auth";
import { readFields } from "../../http/body";
import { accountSession } from "../../http/d1-sessions";
import { methodNotAllowed } from "../../http/method-not-allowed";
import { publicOrigin } from "../../http/request-info";
import { routeGroup } from "../../http/route-group";
import { rateLimits } from "../../http/throttles/rate-limits";
import type { WebhookEndpointRow } from "../../model/webhook-schema";
import { endpointAttempts, presentAttempt } from "../../webhooks/attempts";
import {
  changeEndpoint,
  createEndpoint,
  getOwnedEndpoint,
  listEndpoints,
  presentEndpoint,
  removeEndpoint,
  rotateSecret,
} from "../../webhooks/endpoints";
import { sendTestEvent } from "../../webhooks/test-event";
import { deleteResponseSchema } from "../../uploads/schemas/resources";
import { envelope } from "../envelope";
import {
  describeWebhookChange,
  describeWebhookCreate,
  describeWebhookDeliveries,
  describeWebhookDelete,
  describeWebhookGet,
  describeWebhookList,
  describeWebhookRotate,
  describeWebhookTest,
} from "./openapi";
import {
  attemptListResponseSchema,
  endpointChangeBody,
  endpointCreateBody,
  endpointListResponseSchema,
  endpointResponseSchema,
  endpointSecretResponseSchema,
  testEventResponseSchema,
} from "./schemas";

/**
 * Webhook endpoints (extension): managed with the account's full key, on the API's limits and D1
 * session as the albums' operations are.
 */

const account = (c: Context<AppEnv>) => c.var.caller.accountId;
const id = (c: Context<AppEnv>) => c.req.param("id")!;
const answer = (c: Context<AppEnv>, row: WebhookEndpointRow) =>
  envelope(c, endpointResponseSchema, { msg: "success", data: presentEndpoint(row) });
/** A new endpoint or a rotation: the endpoint, and its secret, answered this once. */
const withSecret = (c: Context<AppEnv>, made: { endpoint: WebhookEndpointRow; secret: string }) =>
  envelope(c, endpointSecretResponseSchema, {
    msg: "success",
    data: { ...presentEndpoint(made.endpoint), secret: made.secret },
  });

export const webhookRoutes = routeGroup(identifyCaller, rateLimits("api"), accountSession)
  .post("/webhooks", describeWebhookCreate, requireKey("full"), async (c) => {
    const fields = parseOrThrow(endpointCreateBody, await readFields(c.req.raw));
    return withSecret(c, await createEndpoint(endpointDeps(c), account(c), publicOrigin(c), fields));
  })
  .get("/webhooks", describeWebhookList, requireKey("full"), async (c) => {
    const rows = await listEndpoints(requestStores(c), account(c));
    return envelope(c, endpointListResponseSchema, { data: rows.map(presentEndpoint) });
  })
  .all("/webhooks", methodNotAllowed("GET", "POST"))

  .get("/webhooks/:id", describeWebhookGet, requireKey("full"), async (c) =>
    answer(c, await getOwnedEndpoint(requestStores(c), account(c), id(c))),
  )
  .patch("/webhooks/:id", describeWebhookChange, requireKey("full"), async (c) => {
    const fields = parseOrThrow(endpointChangeBody, await readFields(c.req.raw));
    return answer(c, await changeEndpoint(endpointDeps(c), account(c), id(c), fields));
  })
  .delete("/webhooks/:id", describeWebhookDelete, requireKey("full"), async (c) => {
    await removeEndpoint(requestStores(c), account(c), id(c));
    return envelope(c, deleteResponseSchema, { msg: "Deleted." });
  })
  .all("/webhooks/:id", methodNotAllowed("GET", "PATCH", "DELETE"))

  .post("/webhooks/:id/rotate", describeWebhookRotate, requireKey("full"), async (c) =>
    withSecret(c, await rotateSecret(requestStores(c), account(c), id(c))),
  )
  .all("/webhooks/:id/rotate", methodNotAllowed("POST"))

  .post("/webhooks/:id/test", describeWebhookTest, requireKey("full"), async (c) => {
    const eventId = await sendTestEvent(requestStores(c), account(c), id(c));
    return envelope(c, testEventResponseSchema, { msg: "Queued.", data: { event_id: eventId } }, 202);
  })
  .all("/webhooks/:id/test", methodNotAllowed("POST"))

  .get("/webhooks/:id/deliveries", describeWebhookDeliveries, requireKey("full"), async (c) => {
    const rows = await endpointAttempts(requestStores(c), account(c), id(c));
    return envelope(c, attemptListResponseSchema, { data: rows.map(presentAttempt) });
  })
  .all("/webhooks/:id/deliveries", methodNotAllowed("GET"));
