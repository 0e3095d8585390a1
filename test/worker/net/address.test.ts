import { describe, expect, it } from "vitest";
import { checkAddress, isIpLiteral } from "../../../src/net/address";

/** What a URL's host becomes after WHATWG parsing (which also normalises decimal, octal and hex IPv4). */
const host = (url: string) => new URL(url).hostname;

describe("addresses a link may not reach", () => {
  it.each([
    ["http://127.0.0.1/", "loopback"],
    ["http://127.255.255.254/", "loopback"],
    ["http://2130706433/", "loopback"], // decimal
    ["http://0177.0.0.1/", "loopback"], // octal
    ["http://0x7f.0.0.1/", "loopback"], // hex
    ["http://0x7f000001/", "loopback"],
    ["http://127.1/", "loopback"], // short form
    ["http://0.0.0.0/", "unspecified"],
    ["http://0/", "unspecified"],
    ["http://10.1.2.3/", "private"],
    ["http://172.16.0.1/", "private"],
    ["http://172.31.255.255/", "private"],
    ["http://192.168.1.1/", "private"],
    ["http://169.254.169.254/", "link-local"], // cloud metadata
    ["http://100.64.0.1/", "carrier-grade NAT"],
    ["http://100.127.255.255/", "carrier-grade NAT"],
    ["http://224.0.0.1/", "multicast"],
    ["http://239.255.255.250/", "multicast"],
    ["http://240.0.0.1/", "reserved"],
    ["http://255.255.255.255/", "reserved"], // broadcast
    ["http://192.0.2.1/", "documentation"],
    ["http://198.18.0.1/", "reserved"],
    ["http://[::]/", "unspecified"],
    ["http://[::1]/", "loopback"],
    ["http://[::ffff:127.0.0.1]/", "loopback"], // IPv4-mapped
    ["http://[::ffff:10.0.0.1]/", "private"],
    ["http://[::ffff:169.254.169.254]/", "link-local"],
    ["http://[::127.0.0.1]/", "loopback"], // IPv4-compatible
    ["http://[64:ff9b::7f00:1]/", "loopback"], // NAT64
    ["http://[2002:c0a8:101::1]/", "private"], // 6to4 of 192.168.1.1
    ["http://[fe80::1]/", "link-local"],
    ["http://[fc00::1]/", "private (unique local)"],
    ["http://[fd12:3456::1]/", "private (unique local)"],
    ["http://[ff02::1]/", "multicast"],
    ["http://[2001:db8::1]/", "documentation"],
    ["http://[2001::1]/", "reserved"], // Teredo
    ["http://[100::1]/", "reserved"], // discard-only
    ["http://192.0.0.8/", "reserved"], // IETF protocol assignments
    ["http://192.88.99.1/", "reserved"], // 6to4 relay anycast
    ["http://198.19.255.255/", "reserved"], // benchmarking, top of 198.18.0.0/15
    ["http://198.51.100.7/", "documentation"],
    ["http://203.0.113.9/", "documentation"],
    ["http://192.31.196.1/", "reserved"], // AS112
    ["http://192.175.48.1/", "reserved"], // AS112
    ["http://192.52.193.1/", "reserved"], // AMT relays
    ["http://[64:ff9b::a00:1]/", "private"], // NAT64 of 10.0.0.1
    ["http://[64:ff9b::a9fe:a9fe]/", "link-local"], // NAT64 of 169.254.169.254
    ["http://[64:ff9b:1::1]/", "local NAT64"],
    ["http://[2002:7f00:1::1]/", "loopback"], // 6to4 of 127.0.0.1
    ["http://[::10.0.0.1]/", "private"], // IPv4-compatible, which ipaddr.js alone calls unicast
    ["http://[::ffff:0:a00:1]/", "reserved"], // IPv4-translated
    ["http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "reserved"], // Teredo
    ["http://[2001:2::1]/", "reserved"], // benchmarking
    ["http://[2620:4f:8000::1]/", "reserved"], // AS112
    ["http://[100::ffff:1]/", "reserved"], // discard-only, 100::/64
    ["http://[2001:db8:85a3::8a2e:370:7334]/", "documentation"],
    ["http://[3fff::1]/", "documentation"], // 3fff::/20
    ["http://[fec0::1]/", "link-local"], // deprecated site-local
    ["http://[5f00::1]/", "reserved"], // segment routing
    ["http://[4000::1]/", "reserved"], // unallocated, which ipaddr.js alone calls unicast
  ])("%s: %s", (url, what) => {
    expect(checkAddress(host(url))).toEqual({ allowed: false, reason: `${what} address` });
  });

  it.each([
    "http://93.184.216.34/",
    "http://8.8.8.8/",
    "http://172.32.0.1/",
    "http://100.128.0.1/",
    "http://198.20.0.1/",
    "http://[2606:4700:4700::1111]/",
    "http://[::ffff:8.8.8.8]/",
    "http://[64:ff9b::808:808]/", // NAT64 of 8.8.8.8
    "http://[2002:808:808::1]/", // 6to4 of 8.8.8.8
  ])("allows the public address %s", (url) => {
    expect(checkAddress(host(url))).toEqual({ allowed: true });
  });

  it("takes IPv4 as plain dotted decimal only, also inside IPv6", () => {
    for (const address of [
      "127.1",
      "0x7f000001",
      "2130706433",
      "010.0.0.1",
      "::ffff:010.0.0.1",
      "::ffff:0x7f.0.0.1",
      "example.com",
      "",
    ]) {
      expect(checkAddress(address)).toEqual({ allowed: false, reason: "not an IP address" });
    }
    expect(isIpLiteral("127.0.0.1")).toBe(true);
    expect(isIpLiteral("[::1]")).toBe(true);
    expect(isIpLiteral("127.1")).toBe(false);
  });

  it("allows loopback only when told to (tests), and nothing else private with it", () => {
    expect(checkAddress("127.0.0.1", true)).toEqual({ allowed: true });
    expect(checkAddress("[::1]", true)).toEqual({ allowed: true });
    expect(checkAddress("10.0.0.1", true).allowed).toBe(false);
    expect(checkAddress("0.0.0.0", true).allowed).toBe(false);
    expect(checkAddress("[::ffff:7f00:1]", true)).toEqual({ allowed: true });
    expect(checkAddress("[64:ff9b::a00:1]", true).allowed).toBe(false);
  });
});
