import type { Context } from "hono";
import ipaddr from "ipaddr.js";
import type { AppEnv } from "../env";
import { settingsOf } from "../settings";

/** The configured public origin, or the request's own when none is set. */
export function publicOrigin(c: Context<AppEnv>): string {
  return (settingsOf(c.env).publicOrigin || new URL(c.req.url).origin).replace(/\/+$/, "");
}

/** Cloudflare sets CF-Connecting-IP at the edge; local dev and tests set it themselves. */
export function clientIp(c: Context<AppEnv>): string {
  return c.req.header("CF-Connecting-IP") ?? "unknown";
}

/**
 * The client as per-IP throttles and budgets count it: an IPv6 address by its /64, the least a
 * subscriber is usually given (so one network's 2^64 addresses are one client), IPv4-mapped IPv6
 * as its IPv4 address, anything else as it is. Bans match the exact address (clientIp).
 */
export function clientNetwork(c: Context<AppEnv>): string {
  return networkOf(clientIp(c));
}

function networkOf(ip: string): string {
  if (!ipaddr.IPv6.isValid(ip)) return ip;
  const address = ipaddr.IPv6.parse(ip);
  if (address.isIPv4MappedAddress()) return address.toIPv4Address().toString();
  return `${new ipaddr.IPv6([...address.parts.slice(0, 4), 0, 0, 0, 0]).toString()}/64`;
}

/** Signing of locked uploads' links, for this request. */
export const linkSigning = (c: Context<AppEnv>) => ({ secret: settingsOf(c.env).linkSigningSecret, now: c.var.now() });
