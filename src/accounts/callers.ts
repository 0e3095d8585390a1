import { forbidden } from "../errors";
import { findKeyOwner, type KeyOwner } from "../storage/accounts";
import type { Database } from "../storage/db";
import { hashKey } from "./keys";

/** The account behind a request's API key, and which key it is. */
export interface Caller extends KeyOwner {
  keyHash: string;
}

/**
 * The caller presenting `key` from `ip`, or null for a missing or unknown key. Keys are looked up
 * by their SHA-256, so the lookup's timing depends on a hash the caller cannot steer, never on how
 * much of a real key they guessed; a missing key costs the same hash as a wrong one.
 */
export async function findCaller(db: Database, key: string, ip: string): Promise<Caller | null> {
  const keyHash = await hashKey(key);
  if (key === "") return null;
  const owner = await findKeyOwner(db, keyHash, ip);
  return owner ? { ...owner, keyHash } : null;
}

/** Banned accounts and IPs may not upload (spec: 403 on upload). */
export function assertMayUpload(caller: Pick<Caller, "banned" | "ipBanned">): void {
  if (caller.banned) throw forbidden("This account is banned from uploading.");
  if (caller.ipBanned) throw forbidden("Uploads from this IP address are banned.");
}
