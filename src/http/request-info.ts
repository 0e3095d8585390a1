import type { Context } from "hono";
import type { AppEnv } from "../env";

/** The configured public origin, or the request's own when none is set. */
export function publicOrigin(c: Context<AppEnv>): string {
  const configured = c.env.PUBLIC_ORIGIN?.trim();
  return (configured || new URL(c.req.url).origin).replace(/\/+$/, "");
}

/** Cloudflare sets CF-Connecting-IP at the edge; local dev and tests set it themselves. */
export function clientIp(c: Context<AppEnv>): string {
  return c.req.header("CF-Connecting-IP") ?? "unknown";
}

/** Signing of locked uploads' links, for this request. */
export const linkSigning = (c: Context<AppEnv>) => ({ secret: c.env.LINK_SIGNING_SECRET ?? "", now: c.var.now() });
