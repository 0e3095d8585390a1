import { secretsEqual, toHex } from "../../crypto";

/**
 * Passwords of locked uploads (an extension: the spec shows `locked` and the replace 409, not
 * how a lock is set), kept as PBKDF2-SHA256 with a random salt.
 */
const ITERATIONS = 100_000; // the most Workers' WebCrypto allows

const encoder = new TextEncoder();

async function pbkdf2(password: string, salt: Uint8Array, iterations: number) {
  const key = await crypto.subtle.importKey("raw", encoder.encode(password), "PBKDF2", false, ["deriveBits"]);
  return toHex(await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations }, key, 256));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  return `pbkdf2-sha256$${ITERATIONS}$${toHex(salt)}$${await pbkdf2(password, salt, ITERATIONS)}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, iterations, saltHex, hash] = stored.split("$");
  if (scheme !== "pbkdf2-sha256" || !iterations || !saltHex || !hash) return false;
  const salt = new Uint8Array(saltHex.match(/../g)!.map((h) => parseInt(h, 16)));
  return secretsEqual(await pbkdf2(password, salt, Number(iterations)), hash);
}
