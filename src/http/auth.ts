import { createMiddleware } from "hono/factory";
import type { Context } from "hono";
import { hashKey } from "../accounts/keys";
import type { AppEnv } from "../env";
import { forbidden, unauthorized } from "../errors";
import { findKeyOwner, type KeyOwner } from "../storage/accounts";

/** The account behind the request's key, and which key it is. */
export interface Caller extends KeyOwner {
  keyHash: string;
}
import { clientIp } from "./request-info";

/** The key from `X-API-Key`, or from `?key=` for older integrations; the header wins. */
export function presentedKey(c: Context<AppEnv>): string | undefined {
  return c.req.header("X-API-Key") || c.req.query("key") || undefined;
}

/**
 * Resolves the API key to its account, or null. Keys are looked up by their SHA-256, so the
 * lookup's timing depends on a hash the caller cannot steer, never on how much of a real key
 * they guessed; a missing key costs the same hash and query as a wrong one. The lookup runs in
 * the request's session as apiSession opened it, on the primary: a key made, replaced or removed
 * a moment ago is known there at once, which a lagging replica would not guarantee.
 */
export async function authenticate(c: Context<AppEnv>): Promise<Caller | null> {
  const key = presentedKey(c) ?? "";
  const keyHash = await hashKey(key);
  if (key === "") return null;
  const owner = await findKeyOwner(c.var.db, keyHash, clientIp(c));
  return owner ? { ...owner, keyHash } : null;
}

/** The key kind a route needs; the API gate (limits/middleware.ts) has resolved the caller. */
export const requireKey = (needs: "any" | "full") =>
  createMiddleware<AppEnv>(async (c, next) => {
    if (needs === "full" && c.var.caller.kind !== "full") {
      throw unauthorized("This operation needs the full API key; the upload-only key can only upload.");
    }
    await next();
  });

/** Banned accounts and IPs may not upload (spec: 403 on upload). */
export function assertMayUpload(c: Context<AppEnv>): void {
  if (c.var.caller.banned) throw forbidden("This account is banned from uploading.");
  if (c.var.caller.ipBanned) throw forbidden("Uploads from this IP address are banned.");
}
