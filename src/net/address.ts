import ipaddr from "ipaddr.js";

/**
 * Which addresses the service may download from: public unicast only, so that a link cannot turn
 * the service against its own network or a neighbour's. Which ranges are special (loopback,
 * private, link-local, carrier-grade NAT, multicast, broadcast, reserved, documentation,
 * benchmarking, discard, Teredo, ...) is ipaddr.js's to know, from IANA's registries, and any
 * address in one is refused. The few prefixes written here fill what it leaves to its callers:
 * IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4) are judged by that
 * address, and IPv6 outside global unicast is refused.
 */

type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

const ALLOWED: AddressVerdict = { allowed: true };
const refused = (what: string): AddressVerdict => ({ allowed: false, reason: `${what} address` });

/** How a refusal names ipaddr.js's ranges; any other range it knows is called reserved. */
const RANGE_NAMES: Record<string, string> = {
  unspecified: "unspecified",
  loopback: "loopback",
  private: "private",
  uniqueLocal: "private (unique local)",
  linkLocal: "link-local",
  deprecatedSiteLocal: "link-local",
  carrierGradeNat: "carrier-grade NAT",
  multicast: "multicast",
  // The well-known NAT64 prefix is judged by the address it carries; what is left is 64:ff9b:1::/48.
  rfc6052: "local NAT64",
};

/** ipaddr.js counts the documentation ranges as reserved; a refusal says which they are. */
const DOCUMENTATION = ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32", "3fff::/20"].map(
  ipaddr.parseCIDR,
);

/**
 * ipaddr.js calls unicast whatever is in none of its ranges, including IPv6 space that is not
 * allocated at all: only 2000::/3 is global unicast.
 */
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR("2000::/3");
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR("64:ff9b::/96");
/** ::a.b.c.d, deprecated but still understood by some stacks as the IPv4 address. */
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR("::/96");

function nameOf(address: ipaddr.IPv4 | ipaddr.IPv6, range: string): string {
  if (range === "reserved") return ipaddr.subnetMatch(address, { documentation: DOCUMENTATION }, "reserved");
  return RANGE_NAMES[range] ?? "reserved";
}

function checkIpv4(address: ipaddr.IPv4, allowLoopback: boolean): AddressVerdict {
  const range = address.range();
  if (range === "unicast" || (range === "loopback" && allowLoopback)) return ALLOWED;
  return refused(nameOf(address, range));
}

/**
 * The IPv4 address an IPv6 one reaches, when it carries one (mapped ones ipaddr.process has
 * already turned into IPv4).
 */
function carriedIpv4(address: ipaddr.IPv6, range: string): ipaddr.IPv4 | null {
  const bytes = address.toByteArray();
  if (range === "6to4") return new ipaddr.IPv4(bytes.slice(2, 6));
  // :: and ::1 are ranges of their own, never unicast.
  if (
    (range === "rfc6052" && address.match(NAT64_WELL_KNOWN)) ||
    (range === "unicast" && address.match(IPV4_COMPATIBLE))
  ) {
    return new ipaddr.IPv4(bytes.slice(12));
  }
  return null;
}

function checkIpv6(address: ipaddr.IPv6, allowLoopback: boolean): AddressVerdict {
  const range = address.range();
  const carried = carriedIpv4(address, range);
  if (carried) return checkIpv4(carried, allowLoopback);
  if (range === "loopback" && allowLoopback) return ALLOWED;
  if (range === "unicast") return address.match(GLOBAL_UNICAST) ? ALLOWED : refused("reserved");
  return refused(nameOf(address, range));
}

/**
 * Dotted decimal IPv4 only, as URL parsing and DNS answers give it, also inside IPv6
 * (::ffff:1.2.3.4): ipaddr.js would otherwise take 127.1, hex, and 010 as octal.
 */
const isDottedDecimal = (text: string) => ipaddr.IPv4.isValidFourPartDecimal(text);

function parse(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  if (isDottedDecimal(text)) return ipaddr.IPv4.parse(text);
  if (!ipaddr.IPv6.isValid(text)) return null;
  const tail = text.replace(/%.*$/, "").split(":").at(-1)!;
  if (tail.includes(".") && !isDottedDecimal(tail)) return null;
  return ipaddr.process(text); // IPv4-mapped IPv6 becomes the IPv4 address it stands for
}

/** Judges an address as a URL's hostname or a DNS answer gives it (IPv6 with or without brackets). */
export function checkAddress(address: string, allowLoopback = false): AddressVerdict {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  const parsed = parse(bare);
  if (!parsed) return { allowed: false, reason: "not an IP address" };
  return parsed instanceof ipaddr.IPv4 ? checkIpv4(parsed, allowLoopback) : checkIpv6(parsed, allowLoopback);
}

/** A hostname that is an IP literal (as the URL parser normalised it), rather than a name to resolve. */
export const isIpLiteral = (hostname: string) =>
  isDottedDecimal(hostname) || (hostname.startsWith("[") && hostname.endsWith("]"));
