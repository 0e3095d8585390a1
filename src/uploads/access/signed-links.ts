import { secretsEqual, toHex } from "../../crypto";

/**
 * A locked upload's files are served only through short-lived signed links (HMAC-SHA256 over the
 * path and an expiry), which its page hands out once the password is given and the API hands its
 * owner as `path` and `thumb`.
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

/** `url` with `exp` (Unix seconds) and `sig` query parameters, valid for SIGNED_LINK_SECONDS. */
export async function signUrl(secret: string, url: string, now: number): Promise<string> {
  const parsed = new URL(url);
  const exp = Math.floor(now / 1000) + SIGNED_LINK_SECONDS;
  parsed.searchParams.set("exp", String(exp));
  parsed.searchParams.set("sig", await hmac(secret, `${parsed.pathname}\n${exp}`));
  return parsed.toString();
}

type LinkCheck = "valid" | "missing" | "expired" | "invalid";

/** Whether a request's path carries a good signature (tampered, expired or missing otherwise). */
export async function checkSignedUrl(secret: string, url: URL, now: number): Promise<LinkCheck> {
  const exp = url.searchParams.get("exp");
  const sig = url.searchParams.get("sig");
  if (!exp || !sig) return "missing";
  if (!/^\d{1,12}$/.test(exp)) return "invalid";
  if (!(await secretsEqual(sig, await hmac(secret, `${url.pathname}\n${exp}`)))) return "invalid";
  return Number(exp) * 1000 > now ? "valid" : "expired";
}
