import { describe, expect, it } from "vitest";
import {
  checkAlbumUrl,
  checkSignedUrl,
  SIGNED_LINK_SECONDS,
  signAlbumUrl,
  signUrl,
} from "../../../src/uploads/access/signed-links";

/**
 * Signed links on their own, to the millisecond: valid until their expiry and expired from it on,
 * for a locked upload's files and a locked album's pages alike, each refusing the other's.
 */

const SECRET = "a-test-secret-of-some-length";
const HASH = `pbkdf2-sha256$100000$00112233445566778899aabbccddeeff$${"ab".repeat(32)}`;
const NOW = 1_790_000_000_250;
const EXP = Math.floor(NOW / 1000) + SIGNED_LINK_SECONDS;

const kinds = [
  {
    kind: "file",
    sign: (url: string, now: number) => signUrl(SECRET, url, now),
    check: (url: string, now: number) => checkSignedUrl(SECRET, new URL(url), now),
  },
  {
    kind: "album page",
    sign: (url: string, now: number) => signAlbumUrl(SECRET, url, now, HASH),
    check: (url: string, now: number) => checkAlbumUrl(SECRET, new URL(url), now, HASH),
  },
] as const;

describe.each(kinds)("a signed $kind link", ({ sign, check }) => {
  it("is valid up to its expiry, SIGNED_LINK_SECONDS on, and expired from that second", async () => {
    const url = await sign("https://media.test/a/Qm3xT0aLb9", NOW);
    expect(new URL(url).searchParams.get("exp")).toBe(String(EXP));
    expect(await check(url, NOW)).toBe("valid");
    expect(await check(url, EXP * 1000 - 1)).toBe("valid");
    expect(await check(url, EXP * 1000)).toBe("expired");
    expect(await check(url, EXP * 1000 + 60_000)).toBe("expired");
  });

  it("is invalid with its expiry moved, on another path, or with no signature", async () => {
    const url = await sign("https://media.test/i/kaJylaVTzH.png", NOW);
    expect(await check(url.replace(`exp=${EXP}`, `exp=${EXP + 3600}`), NOW)).toBe("invalid");
    expect(await check(url.replace("/i/kaJylaVTzH.png", "/i/kaJylaVTzI.png"), NOW)).toBe("invalid");
    expect(await check("https://media.test/i/kaJylaVTzH.png", NOW)).toBe("missing");
  });
});

describe("file links and album page links", () => {
  it("never open each other, and an album's link opens nothing once its password hash is another", async () => {
    const url = "https://media.test/a/Qm3xT0aLb9";
    const file = await signUrl(SECRET, url, NOW);
    const album = await signAlbumUrl(SECRET, url, NOW, HASH);
    expect(await checkAlbumUrl(SECRET, new URL(file), NOW, HASH)).toBe("invalid");
    expect(await checkSignedUrl(SECRET, new URL(album), NOW)).toBe("invalid");
    expect(await checkAlbumUrl(SECRET, new URL(album), NOW, HASH.replace("00112233", "00112234"))).toBe("invalid");
  });
});
