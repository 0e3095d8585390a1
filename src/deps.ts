import type { Context } from "hono";
import type { AppEnv, Env } from "./env";
import { mediaService } from "./media/service";
import type { Database } from "./storage/db";
import { database } from "./storage/db";
import type { UploadDeps } from "./uploads/upload-deps";
import { dohResolver } from "./net/resolve";
import type { LinkDeps } from "./uploads/intake/link-download";
import type { ProcessDeps } from "./uploads/media-jobs/jobs";

/** The domain's dependencies for a request: its bindings, its database handle and the app's clock. */
export const requestDeps = (c: Context<AppEnv>) => uploadDeps(c.env, c.var.db, c.var.now);

/** Where the domain's dependencies are built from the Worker's bindings, for routes and cron alike. */
export function uploadDeps(env: Env, db: Database = database(env.DB), now: () => number = Date.now): UploadDeps {
  return { db, bucket: env.FILES, now };
}

export function processDeps(env: Env, db?: Database, now?: () => number): ProcessDeps {
  return {
    ...uploadDeps(env, db, now),
    media: mediaService(env),
    retryBaseMs: positiveNumber(env.MEDIA_RETRY_SECONDS, 60) * 1000,
  };
}

const positiveNumber = (value: string | undefined, fallback: number) => {
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? n : fallback;
};

export const DEFAULT_DNS_RESOLVER = "https://cloudflare-dns.com/dns-query";

export function linkDeps(env: Env): LinkDeps {
  return {
    resolve: dohResolver(env.DNS_RESOLVER_URL || DEFAULT_DNS_RESOLVER),
    fetch: (input, init) => fetch(input, init),
    allowLoopback: env.UNSAFE_ALLOW_LOOPBACK_LINKS === "true",
    timeoutMs: positiveNumber(env.LINK_TIMEOUT_SECONDS, 120) * 1000,
  };
}
