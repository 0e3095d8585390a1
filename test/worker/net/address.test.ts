import { describe, expect, it } from "vitest";
import { checkAddress } from "../../../src/net/address";

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
    ["http://255.255.255.255/", "reserved"],
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
  ])("%s: %s", (url, what) => {
    expect(checkAddress(host(url))).toEqual({ allowed: false, reason: `${what} address` });
  });

  it.each(["http://93.184.216.34/", "http://8.8.8.8/", "http://172.32.0.1/", "http://100.128.0.1/", "http://[2606:4700:4700::1111]/", "http://[::ffff:8.8.8.8]/"])(
    "allows the public address %s",
    (url) => {
      expect(checkAddress(host(url))).toEqual({ allowed: true });
    },
  );

  it("allows loopback only when told to (tests), and nothing else private with it", () => {
    expect(checkAddress("127.0.0.1", true)).toEqual({ allowed: true });
    expect(checkAddress("[::1]", true)).toEqual({ allowed: true });
    expect(checkAddress("10.0.0.1", true).allowed).toBe(false);
    expect(checkAddress("0.0.0.0", true).allowed).toBe(false);
  });
});
