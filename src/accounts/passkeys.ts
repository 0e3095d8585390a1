import type { RegistrationResponseJSON } from "@simplewebauthn/server";
import { ApiError, notFound } from "../errors";
import type { Database } from "../storage/db";
import { deletePasskey, insertPasskey, listPasskeys } from "../storage/passkeys";
import { type RelyingParty, verifyRegistration } from "./passkey-ceremonies";

/** A passkey the signed-in account adds, its registration answer checked against its own challenge. */
export async function addPasskey(
  db: Database,
  rp: RelyingParty,
  accountId: string,
  answer: { response: RegistrationResponseJSON; passkeyName: string },
  now: number,
): Promise<void> {
  const credential = await verifyRegistration(db, rp, { accountId }, answer.response, now);
  try {
    await insertPasskey(db, { ...credential, name: answer.passkeyName, createdAt: now });
  } catch (error) {
    if (String((error as Error)?.cause ?? error).includes("UNIQUE constraint failed: passkeys.id"))
      throw new ApiError(409, "This passkey is registered already.");
    throw error;
  }
}

/** Removes one of the account's passkeys; never its last (409), which would lock it out of the dashboard. */
export async function removePasskey(db: Database, accountId: string, id: string): Promise<void> {
  const outcome = await deletePasskey(db, accountId, id);
  if (outcome === "gone") throw notFound("No such passkey.");
  if (outcome === "last")
    throw new ApiError(409, "This is the account's last passkey: add another before removing it.");
}

export const passkeysOf = (db: Database, accountId: string) => listPasskeys(db, accountId);
