import { randomBase62 } from "../crypto";
import { notFound } from "../errors";
import * as store from "../storage/accounts";
import type { Database } from "../storage/db";
import type { KeyKind } from "../model/key-kinds";
import { generateKey, hashKey } from "./keys";

/** A new account's id: 12 base62 characters. */
export const newAccountId = () => randomBase62(12);

export async function createAccount(db: Database, name: string, now: number) {
  const id = newAccountId();
  const keys = { full: generateKey("full"), upload: generateKey("upload") };
  await store.insertAccount(db, {
    id,
    name,
    keyHashes: { full: await hashKey(keys.full), upload: await hashKey(keys.upload) },
    now,
  });
  return { id, name, full_key: keys.full, upload_key: keys.upload };
}

/** Issues a new key of that kind; the previous one stops working with this write. */
export async function regenerateKey(db: Database, accountId: string, kind: KeyKind, now: number) {
  const key = generateKey(kind);
  if (!(await store.replaceKey(db, accountId, kind, await hashKey(key), now))) throw notFound("No such account.");
  return { id: accountId, kind, key };
}

export async function setAccountBanned(db: Database, accountId: string, banned: boolean, now: number) {
  if (!(await store.setAccountBan(db, accountId, banned ? now : null))) throw notFound("No such account.");
  return { id: accountId, banned };
}

/** The account's name (a 404 when there is no such account). */
export async function accountName(db: Database, accountId: string): Promise<string> {
  const name = await store.findAccountName(db, accountId);
  if (name === null) throw notFound("No such account.");
  return name;
}
