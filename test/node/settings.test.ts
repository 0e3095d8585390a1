import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { unstable_readConfig } from "wrangler";
import { ROOT } from "../../scripts/lib/server.mjs";
import { settingsOf, type Settings } from "../../src/settings";

const read = (vars: Record<string, unknown>) => settingsOf(vars as unknown as Cloudflare.Env);
const GiB = 2 ** 30;

afterEach(() => vi.restoreAllMocks());

describe("settings", () => {
  it("have the service's defaults when no var is set", () => {
    expect(read({})).toEqual({
      publicOrigin: "",
      adminToken: null,
      linkSigningSecret: "",
      expiresInMax: 31_536_000,
      edgeMaxBodyBytes: 100_000_000,
      quotas: { bytes: null, uploads: null },
      transformCopyCap: { copies: 200, bytes: 64 * 1024 * 1024 },
      media: { serviceUrl: "", secret: "", retryBaseMs: 60_000, videoSecondsPerDay: 3600 },
      links: { dnsResolverUrl: "https://cloudflare-dns.com/dns-query", allowLoopback: false, timeoutMs: 120_000 },
      limits: {
        enabled: true,
        perMinute: 20,
        fullKeyPerDay: 500,
        uploadKeyPerDay: 2000,
        ipPerDay: 2000,
        piecesPerMinute: 300,
        pieceBytesPerDay: 4 * GiB,
        ipPieceBytesPerDay: 8 * GiB,
        badKeyPerMinute: 10,
      },
    });
  });

  it("are the same from wrangler.toml's [vars] as from no vars: the file states the defaults", () => {
    const { vars } = unstable_readConfig({ config: path.join(ROOT, "wrangler.toml") });
    expect(read(vars)).toEqual(read({}));
  });

  it.each<[string, string, (settings: Settings) => unknown, unknown]>([
    ["PUBLIC_ORIGIN", "  https://media.example.com/ ", (s) => s.publicOrigin, "https://media.example.com/"],
    ["ADMIN_TOKEN", "a".repeat(32), (s) => s.adminToken, "a".repeat(32)],
    ["LINK_SIGNING_SECRET", "link-secret", (s) => s.linkSigningSecret, "link-secret"],
    ["MEDIA_SERVICE_URL", "http://127.0.0.1:9000", (s) => s.media.serviceUrl, "http://127.0.0.1:9000"],
    ["MEDIA_SECRET", "media-secret", (s) => s.media.secret, "media-secret"],
    ["MEDIA_RETRY_SECONDS", "1.5", (s) => s.media.retryBaseMs, 1500],
    ["VIDEO_MINUTES_PER_DAY", "5", (s) => s.media.videoSecondsPerDay, 300],
    ["LINK_TIMEOUT_SECONDS", "30", (s) => s.links.timeoutMs, 30_000],
    [
      "DNS_RESOLVER_URL",
      "http://127.0.0.1:9001/dns-query",
      (s) => s.links.dnsResolverUrl,
      "http://127.0.0.1:9001/dns-query",
    ],
    ["UNSAFE_ALLOW_LOOPBACK_LINKS", "true", (s) => s.links.allowLoopback, true],
    ["EXPIRES_IN_MAX_SECONDS", "2592000", (s) => s.expiresInMax, 2_592_000],
    ["EDGE_MAX_BODY_BYTES", "200000000", (s) => s.edgeMaxBodyBytes, 200_000_000],
    ["RATE_LIMITS", "off", (s) => s.limits.enabled, false],
    ["RATE_LIMIT_PER_MINUTE", "1", (s) => s.limits.perMinute, 1],
    ["RATE_LIMIT_FULL_KEY_PER_DAY", "2", (s) => s.limits.fullKeyPerDay, 2],
    ["RATE_LIMIT_UPLOAD_KEY_PER_DAY", "3", (s) => s.limits.uploadKeyPerDay, 3],
    ["RATE_LIMIT_IP_PER_DAY", "4", (s) => s.limits.ipPerDay, 4],
    ["RATE_LIMIT_PIECES_PER_MINUTE", "5", (s) => s.limits.piecesPerMinute, 5],
    ["RATE_LIMIT_PIECE_BYTES_PER_DAY", "1000", (s) => s.limits.pieceBytesPerDay, 1000],
    ["RATE_LIMIT_IP_PIECE_BYTES_PER_DAY", String(2 ** 50), (s) => s.limits.ipPieceBytesPerDay, 2 ** 50],
    ["RATE_LIMIT_BAD_KEY_PER_MINUTE", "7", (s) => s.limits.badKeyPerMinute, 7],
  ])("take %s = %j", (name, value, pick, expected) => {
    expect(pick(read({ [name]: value }))).toEqual(expected);
  });

  it.each(["", "0", "-5", "abc", "Infinity", "NaN"])(
    "take the default seconds for %j: any finite number above 0 will do",
    (value) => {
      const settings = read({ MEDIA_RETRY_SECONDS: value, LINK_TIMEOUT_SECONDS: value });
      expect([settings.media.retryBaseMs, settings.links.timeoutMs]).toEqual([60_000, 120_000]);
    },
  );

  it.each(["", "0", "-1", "2.5", "ten", "Infinity"])(
    "take the default limit for %j: a count is a positive integer",
    (value) => {
      expect(read({ RATE_LIMIT_PER_MINUTE: value, RATE_LIMIT_PIECE_BYTES_PER_DAY: value }).limits).toMatchObject({
        perMinute: 20,
        pieceBytesPerDay: 4 * GiB,
      });
    },
  );

  it("read counts and seconds as Number() does", () => {
    const settings = read({
      RATE_LIMIT_PER_MINUTE: " 30 ",
      RATE_LIMIT_IP_PER_DAY: "1e3",
      RATE_LIMIT_BAD_KEY_PER_MINUTE: "0x10",
      LINK_TIMEOUT_SECONDS: "1e-3",
    });
    expect(settings.limits).toMatchObject({ perMinute: 30, ipPerDay: 1000, badKeyPerMinute: 16 });
    expect(settings.links.timeoutMs).toBe(1);
  });

  it.each([
    ["59", 31_536_000],
    ["60", 60],
    ["31536000", 31_536_000],
    ["31536001", 31_536_000],
    ["3600.5", 31_536_000],
    ["a day", 31_536_000],
    ["86400", 86_400],
  ])("take EXPIRES_IN_MAX_SECONDS %j as %d: an integer from 60 s to a year", (value, expected) => {
    expect(read({ EXPIRES_IN_MAX_SECONDS: value }).expiresInMax).toBe(expected);
  });

  it.each([
    ["RATE_LIMITS", "off", false],
    ["RATE_LIMITS", "on", true],
    ["RATE_LIMITS", "OFF", true],
    ["RATE_LIMITS", "false", true],
    ["RATE_LIMITS", "", true],
    ["UNSAFE_ALLOW_LOOPBACK_LINKS", "true", true],
    ["UNSAFE_ALLOW_LOOPBACK_LINKS", "TRUE", false],
    ["UNSAFE_ALLOW_LOOPBACK_LINKS", "1", false],
    ["UNSAFE_ALLOW_LOOPBACK_LINKS", "", false],
  ])("switch %s only for its one exact word (%j gives %j)", (name, value, on) => {
    const settings = read({ [name]: value });
    expect(name === "RATE_LIMITS" ? settings.limits.enabled : settings.links.allowLoopback).toBe(on);
  });

  it("use the default DNS resolver for an empty DNS_RESOLVER_URL, and an origin of spaces as none", () => {
    expect(read({ DNS_RESOLVER_URL: "" }).links.dnsResolverUrl).toBe("https://cloudflare-dns.com/dns-query");
    expect(read({ PUBLIC_ORIGIN: "   " }).publicOrigin).toBe("");
  });

  it("leave /admin off for an ADMIN_TOKEN under 32 characters, and say so once in the log", () => {
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    expect(read({ ADMIN_TOKEN: "" }).adminToken).toBeNull();
    expect(log).not.toHaveBeenCalled();
    expect(read({ ADMIN_TOKEN: "a".repeat(31) }).adminToken).toBeNull();
    expect(read({ ADMIN_TOKEN: "b".repeat(31) }).adminToken).toBeNull();
    expect(log).toHaveBeenCalledOnce();
    expect(String(log.mock.calls[0]![0])).toContain("shorter than 32 characters");
  });

  it("never throw: a var of another type (a JSON var) is read like an unset one, or as Number() reads it", () => {
    const settings = read({
      PUBLIC_ORIGIN: 5,
      ADMIN_TOKEN: { a: 1 },
      RATE_LIMIT_PER_MINUTE: 30,
      EXPIRES_IN_MAX_SECONDS: [],
      RATE_LIMITS: false,
    });
    expect(settings).toMatchObject({
      publicOrigin: "",
      adminToken: null,
      expiresInMax: 31_536_000,
      limits: { perMinute: 30, enabled: true },
    });
  });

  it("are read once per env object", () => {
    const env = { RATE_LIMIT_PER_MINUTE: "5" };
    expect(read(env)).toBe(read(env));
    expect(read({ ...env })).not.toBe(read(env));
    expect(read({ ...env })).toEqual(read(env));
  });
});
