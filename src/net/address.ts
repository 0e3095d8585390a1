/**
 * Which addresses the service may download from: public unicast only. Everything a request
 * could use to reach the service's own network or a neighbour's is refused: loopback, private,
 * link-local, carrier-grade NAT, multicast, reserved, documentation and unspecified ranges, and
 * IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4) are judged by that
 * address.
 */

/** [network, prefix length, what it is] */
const IPV4_BLOCKED: [string, number, string][] = [
  ["0.0.0.0", 8, "unspecified"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "carrier-grade NAT"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "reserved"],
  ["192.0.2.0", 24, "documentation"],
  ["192.88.99.0", 24, "reserved"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "reserved"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"],
];

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

/** Dotted-quad IPv4 to a 32-bit number, or null. (URL parsing has already normalised the odd forms.) */
export function parseIpv4(text: string): number | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  let value = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) return null;
    value = value * 256 + Number(part);
  }
  return value;
}

/** An IPv6 address (without brackets) to 8 16-bit groups, or null. */
export function parseIpv6(text: string): number[] | null {
  let s = text.toLowerCase().replace(/%.*$/, "");
  // A trailing dotted quad (::ffff:1.2.3.4) stands for the last two groups.
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(":");
  if (lastColon !== -1 && s.slice(lastColon + 1).includes(".")) {
    const v4 = parseIpv4(s.slice(lastColon + 1));
    if (v4 === null) return null;
    tail = [v4 >>> 16, v4 & 0xffff];
    s = s.endsWith("::", lastColon + 1) ? s.slice(0, lastColon + 1) : s.slice(0, lastColon);
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const groups = (part: string) => (part === "" ? [] : part.split(":").map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN)));
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  if ([...head, ...rest].some(Number.isNaN)) return null;
  const given = head.length + rest.length + tail.length;
  if (halves.length === 1 ? given !== 8 : given > 7) return null;
  return [...head, ...new Array(8 - given).fill(0), ...rest, ...tail];
}

const inV4 = (address: number, network: string, bits: number) => {
  const base = parseIpv4(network)!;
  const size = 2 ** (32 - bits);
  return address >= base && address < base + size;
};

export function checkIpv4(address: number, allowLoopback = false): AddressVerdict {
  if (allowLoopback && inV4(address, "127.0.0.0", 8)) return { allowed: true };
  for (const [network, bits, what] of IPV4_BLOCKED) {
    if (inV4(address, network, bits)) return { allowed: false, reason: `${what} address` };
  }
  return { allowed: true };
}

export function checkIpv6(words: number[], allowLoopback = false): AddressVerdict {
  const [w0, w1, w2, w3, w4, w5, w6, w7] = words as [number, number, number, number, number, number, number, number];
  const v4 = (w6 << 16) + w7 >>> 0;
  const firstSixZero = w0 === 0 && w1 === 0 && w2 === 0 && w3 === 0 && w4 === 0;
  if (firstSixZero && w5 === 0 && w6 === 0 && (w7 === 0 || w7 === 1)) {
    if (w7 === 1 && allowLoopback) return { allowed: true };
    return { allowed: false, reason: w7 === 0 ? "unspecified address" : "loopback address" };
  }
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible) reach the IPv4 address they carry.
  if (firstSixZero && (w5 === 0xffff || w5 === 0)) return checkIpv4(v4, allowLoopback);
  // NAT64 (64:ff9b::/96) likewise; 6to4 (2002::/16) carries it in groups 1-2.
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 0 && w3 === 0 && w4 === 0 && w5 === 0) return checkIpv4(v4, allowLoopback);
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 1) return { allowed: false, reason: "local NAT64 address" };
  if (w0 === 0x2002) return checkIpv4(((w1 << 16) + w2) >>> 0, allowLoopback);
  if ((w0 & 0xfe00) === 0xfc00) return { allowed: false, reason: "private (unique local) address" };
  if ((w0 & 0xffc0) === 0xfe80 || (w0 & 0xffc0) === 0xfec0) return { allowed: false, reason: "link-local address" };
  if ((w0 & 0xff00) === 0xff00) return { allowed: false, reason: "multicast address" };
  if (w0 === 0x2001 && w1 === 0x0db8) return { allowed: false, reason: "documentation address" };
  if (w0 === 0x2001 && w1 < 0x0200) return { allowed: false, reason: "reserved address" }; // IETF protocol assignments, Teredo
  // Global unicast is 2000::/3; the rest of the space is reserved or unassigned.
  if ((w0 & 0xe000) !== 0x2000) return { allowed: false, reason: "reserved address" };
  return { allowed: true };
}

/** Judges an address as a URL's hostname or a DNS answer gives it (IPv6 with or without brackets). */
export function checkAddress(address: string, allowLoopback = false): AddressVerdict {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  const v4 = parseIpv4(bare);
  if (v4 !== null) return checkIpv4(v4, allowLoopback);
  const v6 = parseIpv6(bare);
  if (v6) return checkIpv6(v6, allowLoopback);
  return { allowed: false, reason: "not an IP address" };
}

/** A hostname that is an IP literal (as the URL parser normalised it), rather than a name to resolve. */
export const isIpLiteral = (hostname: string) => parseIpv4(hostname) !== null || (hostname.startsWith("[") && hostname.endsWith("]"));
