import { checkAddress, isIpLiteral } from "./address";
import { ResolveError, type Resolver } from "./resolve";

/**
 * Why the service may not reach `url`'s host, or null when it may: every address its name
 * resolves to must be public (a loopback one only with `allowLoopback`, for local test servers).
 * Link downloads ask it of every hop, webhook deliveries of every attempt.
 */
export async function hostRefusal(resolve: Resolver, url: URL, allowLoopback: boolean): Promise<string | null> {
  const host = url.hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost"))
    return allowLoopback ? null : `address not allowed: ${host} is a loopback name`;
  let addresses: string[];
  if (isIpLiteral(host)) {
    addresses = [host];
  } else {
    try {
      addresses = await resolve(host);
    } catch (error) {
      if (error instanceof ResolveError) return `DNS lookup failed: ${error.message}`;
      throw error;
    }
  }
  for (const address of addresses) {
    const verdict = checkAddress(address, allowLoopback);
    if (!verdict.allowed)
      return `address not allowed: ${host} is ${address === host ? "a" : `${address}, a`} ${verdict.reason}`;
  }
  return null;
}
