import { secretsEqual, toHex } from "../../crypto";

/**
 * Short-lived signed links (HMAC-SHA256 over a purpose, the path and an expiry). A locked
 * upload's files are served only through them: its page hands them out once the password is
 * given, and the API hands its owner `path` and `thumb`. A locked album's page signs its own
 * links the same way once its password is given, under a purpose of its own that names the
 * album's password as it is (its hash, salted afresh by each change): a new password, or the
 * same one set again, refuses every link signed before, and a file link's signature never opens
 * an album page, nor an album page's a file.
 */
export const SIGNED_LINK_SECONDS = 10 * 60;

const encoder = new TextEncoder();

async function hmac(secret: string, message: string) {
  if (secret.length < 16) throw new Error("LINK_SIGNING_SECRET must be set to at least 16 characters");
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  return toHex(await crypto.subtle.sign("HMAC", key, encoder.encode(message)));
}

/** What a signature opens, first in its signed message. */
type Purpose = "file:" | `album-page:${string}`;

const FILE: Purpose = "file:";
/** An album page's purpose: its password hash (no newline in it) as it is now. */
const albumPage = (passwordHash: string): Purpose => `album-page:${passwordHash}`;

const message = (purpose: Purpose, pathname: string, exp: string | number) => `${purpose}\n${pathname}\n${exp}`;

async function sign(secret: string, purpose: Purpose, url: string, now: number, seconds = SIGNED_LINK_SECONDS) {
  const parsed = new URL(url);
  const exp = Math.floor(now / 1000) + seconds;
  parsed.searchParams.set("exp", String(exp));
  parsed.searchParams.set("sig", await hmac(secret, message(purpose, parsed.pathname, exp)));
  return parsed.toString();
}

type LinkCheck = "valid" | "missing" | "expired" | "invalid";

async function check(secret: string, purpose: Purpose, url: URL, now: number): Promise<LinkCheck> {
  const exp = url.searchParams.get("exp");
  const sig = url.searchParams.get("sig");
  if (!exp || !sig) return "missing";
  if (!/^\d{1,12}$/.test(exp)) return "invalid";
  if (!(await secretsEqual(sig, await hmac(secret, message(purpose, url.pathname, exp))))) return "invalid";
  return Number(exp) * 1000 > now ? "valid" : "expired";
}

/** A locked upload's file `url` with `exp` (Unix seconds) and `sig` query parameters, valid for SIGNED_LINK_SECONDS. */
export const signUrl = (secret: string, url: string, now: number) => sign(secret, FILE, url, now);

/**
 * A file `url` signed as signUrl signs it, valid for `seconds`: the files an HLS playlist names,
 * which a player fetches for as long as the playback lasts.
 */
export const signUrlFor = (secret: string, url: string, now: number, seconds: number) =>
  sign(secret, FILE, url, now, seconds);

/** Whether a request for a file carries a good file link signature (tampered, expired or missing otherwise). */
export const checkSignedUrl = (secret: string, url: URL, now: number) => check(secret, FILE, url, now);

/** A locked album's page `url`, signed as signUrl signs a file's, for the album's password as it now is. */
export const signAlbumUrl = (secret: string, url: string, now: number, passwordHash: string) =>
  sign(secret, albumPage(passwordHash), url, now);

/** Whether a request for a locked album's page carries a good signature for its password as it now is. */
export const checkAlbumUrl = (secret: string, url: URL, now: number, passwordHash: string) =>
  check(secret, albumPage(passwordHash), url, now);
