import { notFound } from "../errors";
import * as store from "../storage/accounts";
import type { Database } from "../storage/db";

/** Bans uploads from `ip` (the exact address); banning it again changes nothing. */
export async function banAddress(db: Database, ip: string, now: number) {
  await store.banIp(db, ip, now);
  return { ip, banned: true };
}

export async function unbanAddress(db: Database, ip: string) {
  if (!(await store.unbanIp(db, ip))) throw notFound("That IP address is not banned.");
  return { ip, banned: false };
}
