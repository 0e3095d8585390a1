import type { Context } from "hono";
import type { AppEnv, Env } from "./env";
import { afterResponse } from "./http/after-response";
import { mediaService } from "./media/service";
import type { Database } from "./storage/db";
import { database } from "./storage/db";
import { settingsOf } from "./settings";
import type { Stores } from "./storage/stores";
import { dohResolver } from "./net/resolve";
import type { LinkDeps } from "./uploads/intake/link-download";
import { PROGRESS_EVERY_MS, type MediaJobDeps } from "./uploads/media-jobs/jobs";
import { workflowRunner } from "./uploads/media-jobs/runner";
import type { ServingDeps } from "./uploads/serving/lookup";
import { isolateMemo, recordStore } from "./uploads/serving/record-store";
import { VARIANT_CALL_TIMEOUT_MS, type VariantDeps } from "./uploads/variants/make";
import { serviceShare, variantLocks } from "./uploads/variants/lock-stubs";
import type { VariantAnswerDeps } from "./uploads/variants/answer";
import type { UploadCall } from "./uploads/pipeline";
import type { DeliveryDeps } from "./webhooks/deliver";
import { ATTEMPT_TIMEOUT_MS } from "./webhooks/schedule";
import type { EndpointDeps } from "./webhooks/endpoints";
import { VARIANT_SERVICE_SLOTS } from "./media/container-size";
import { limitVariantMaking } from "./http/throttles/network-limits";
import { clientNetwork, publicOrigin } from "./http/request-info";

/** The faces name the stores they are handed by this type. */
export type { Stores };

/** The stores of a request: its bindings, its database handle and the app's clock. */
export const requestStores = (c: Context<AppEnv>) => storesOf(c.env, c.var.db, c.var.now);

/** The stores, from the Worker's bindings, for routes, the cron job and media jobs alike. */
export function storesOf(env: Env, db: Database = database(env.DB), now: () => number = Date.now): Stores {
  return { db, bucket: env.FILES, deliveries: env.WEBHOOK_DELIVERIES, now };
}

/** As requestStores, with the serving records of this isolate and colo (src/uploads/serving). */
export const servingDeps = (c: Context<AppEnv>): ServingDeps => ({
  ...requestStores(c),
  records: recordStore(isolateMemo, typeof caches === "undefined" ? undefined : caches.default, (work) =>
    afterResponse(c, "serving record", work),
  ),
});

export function mediaJobDeps(env: Env, db?: Database, now?: () => number): MediaJobDeps {
  return {
    ...storesOf(env, db, now),
    media: mediaService(env),
    runner: workflowRunner(env.MEDIA_JOBS),
    retryBaseMs: settingsOf(env).media.retryBaseMs,
    videoSecondsPerDay: settingsOf(env).media.videoSecondsPerDay,
    progressEveryMs: PROGRESS_EVERY_MS,
  };
}

/**
 * What making a variant of upload `uploadId` needs, with the media service's shorter call time;
 * a making is charged to the requesting client's network (limitVariantMaking).
 */
export const variantDeps = (c: Context<AppEnv>, uploadId: string): VariantDeps => ({
  db: c.var.db,
  bucket: c.env.FILES,
  media: mediaService(c.env, { callTimeoutMs: VARIANT_CALL_TIMEOUT_MS }),
  locks: variantLocks(c.env, uploadId),
  share: serviceShare(c.env, VARIANT_SERVICE_SLOTS),
  charge: () => limitVariantMaking(c),
  client: clientNetwork(c),
  copyCap: settingsOf(c.env).transformCopyCap,
});

/** As servingDeps, with what making one of the upload's variants needs (src/uploads/variants/answer.ts). */
export const variantAnswerDeps = (c: Context<AppEnv>): VariantAnswerDeps => ({
  ...servingDeps(c),
  making: (uploadId) => variantDeps(c, uploadId),
});

/** What sending webhook deliveries needs (the queue's consumer): the address rule of links, fetch, the origin. */
export function webhookDeliveryDeps(env: Env, now: () => number = Date.now): DeliveryDeps {
  const { links, publicOrigin } = settingsOf(env);
  return {
    db: database(env.DB),
    now,
    resolve: dohResolver(links.dnsResolverUrl),
    fetch: (input, init) => fetch(input, init),
    allowLoopback: links.allowLoopback,
    publicOrigin,
    attemptTimeoutMs: ATTEMPT_TIMEOUT_MS,
  };
}

export function linkDeps(env: Env): LinkDeps {
  const { dnsResolverUrl, allowLoopback, timeoutMs } = settingsOf(env).links;
  return { resolve: dohResolver(dnsResolverUrl), fetch: (input, init) => fetch(input, init), allowLoopback, timeoutMs };
}

/** The request's stores, and the link uploads' address rule for webhook endpoints' URLs. */
export function endpointDeps(c: Context<AppEnv>): EndpointDeps {
  const { resolve, allowLoopback } = linkDeps(c.env);
  return { ...requestStores(c), resolve, allowLoopback };
}

/** What the upload pipeline knows of this request (src/uploads/pipeline.ts), as every way in hands it over. */
export function uploadCall(c: Context<AppEnv>): UploadCall {
  const { quotas, expiresInMax, linkSigningSecret } = settingsOf(c.env);
  return {
    caller: c.var.caller,
    settings: { quotas, expiresInMax },
    origin: publicOrigin(c),
    signingSecret: linkSigningSecret,
    link: linkDeps(c.env),
    startMediaJob: (jobId) => afterResponse(c, "media job", workflowRunner(c.env.MEDIA_JOBS).start(jobId)),
  };
}
