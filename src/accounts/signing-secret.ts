import type { Database } from "../storage/db";
import * as stored from "../storage/signing-secrets";
import { isoTimestamp } from "../time";

/**
 * The account's secret for signing transform URLs, as its owner reads and rotates it
 * (GET /api/signing-secret, POST /api/signing-secret/rotate): made on the first read, replaced
 * at once by a rotation, so that a secret that leaked stops every URL it signed.
 */

const present = (made: stored.SigningSecret) => ({ secret: made.secret, created_at: isoTimestamp(made.createdAt) });

export const readSigningSecret = async (db: Database, accountId: string, now: number) =>
  present(await stored.ensureSigningSecret(db, accountId, now));

export const rotateSigningSecret = async (db: Database, accountId: string, now: number) =>
  present(await stored.rotateSigningSecret(db, accountId, now));
