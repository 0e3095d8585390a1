import { unprocessable } from "../errors";
import { hostRefusal } from "../net/public-host";
import type { Resolver } from "../net/resolve";

/** What judging an endpoint's URL needs: the link uploads' resolver and their loopback flag. */
export interface UrlRule {
  resolve: Resolver;
  /** Unsafe, for local test receivers: http, and loopback addresses, are allowed too. */
  allowLoopback: boolean;
}

/** An endpoint URL's length at most: what browsers and proxies agree on. */
export const ENDPOINT_URL_MAX = 2048;

const refused = (reason: string) => unprocessable(`url: ${reason}.`);

/**
 * `raw` as an endpoint's URL, or a 422 saying why not: an absolute https URL (http too only with
 * the unsafe loopback flag), without credentials, whose host resolves only to public addresses by
 * the same rule as link uploads. Deliveries check the address again at every attempt: a name can
 * move after it was accepted.
 */
export async function checkEndpointUrl(rule: UrlRule, raw: string): Promise<string> {
  if (raw.length > ENDPOINT_URL_MAX) throw refused(`must be at most ${ENDPOINT_URL_MAX} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refused("must be an absolute URL");
  }
  const schemes = rule.allowLoopback ? ["https:", "http:"] : ["https:"];
  if (!schemes.includes(url.protocol)) throw refused(`must be an https URL (got ${url.protocol.replace(/:$/, "")})`);
  if (url.username || url.password) throw refused("must not carry a user name or password");
  const refusal = await hostRefusal(rule.resolve, url, rule.allowLoopback);
  if (refusal) throw refused(refusal);
  return url.href;
}
