import { createMiddleware } from "hono/factory";
import type { Context } from "hono";
import { findCaller } from "../accounts/callers";
import type { AppEnv } from "../env";
import { unauthorized } from "../errors";
import { countBadKey } from "./throttles/budgets";
import { clientIp } from "./request-info";

/** The key from `X-API-Key`, or from `?key=` for older integrations; the header wins. */
export function presentedKey(c: Context<AppEnv>): string | undefined {
  return c.req.header("X-API-Key") || c.req.query("key") || undefined;
}

/**
 * Ways in that other tools speak (MCP clients, Lsky Pro's uploaders) send the key as
 * `Authorization: Bearer <key>`; X-API-Key and ?key= still count, and win, as on the API.
 * The API itself does not read Authorization: the spec defines its key by X-API-Key alone.
 */
export function bearerOrPresentedKey(c: Context<AppEnv>): string | undefined {
  const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(c.req.header("Authorization") ?? "")?.[1];
  return presentedKey(c) ?? bearer;
}

type KeyOf = (c: Context<AppEnv>) => string | undefined;

/**
 * Who is calling: the request's key resolved to its caller, before anything else of an API
 * operation happens. A missing or invalid key is a 401, and such requests are themselves
 * throttled per client network, so keys cannot be guessed at speed. Which key kind an operation
 * needs is the operation's business (requireKey). The key is looked up in the request's session
 * as apiSession opened it, on the primary: a key made, replaced or removed a moment ago is known
 * there at once, which a lagging replica would not guarantee.
 */
export const identifyCallerBy = (keyOf: KeyOf, refuse: (c: Context<AppEnv>) => Error = () => unauthorized()) =>
  createMiddleware<AppEnv>(async (c, next) => {
    // The dashboard's own calls (/app/api) come identified by their session, with the full key's rights.
    if (c.var.signIn) return next();
    const caller = await findCaller(c.var.db, keyOf(c) ?? "", clientIp(c));
    if (!caller) {
      await countBadKey(c);
      throw refuse(c);
    }
    c.set("caller", caller);
    await next();
  });

export const identifyCaller = identifyCallerBy(presentedKey);

/** The key kind a route needs; identifyCaller has resolved the caller. */
export const requireKey = (needs: "any" | "full") =>
  createMiddleware<AppEnv>(async (c, next) => {
    if (needs === "full") assertFullKey(c);
    await next();
  });

export function assertFullKey(c: Context<AppEnv>): void {
  if (c.var.caller.kind !== "full") {
    throw unauthorized("This operation needs the full API key; the upload-only key can only upload.");
  }
}
