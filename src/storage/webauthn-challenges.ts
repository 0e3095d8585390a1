import { and, eq, gt } from "drizzle-orm";
import type { Database } from "./db";
import { deleteExpiredRows } from "./expired-rows";
import { webauthnChallenges } from "../model/sign-in-schema";

export type ChallengeRow = typeof webauthnChallenges.$inferSelect;

export async function insertChallenge(db: Database, row: ChallengeRow): Promise<void> {
  await db.insert(webauthnChallenges).values(row);
}

/**
 * Takes the challenge for `purpose` if it is still current: it is deleted as it is read, so an
 * answer to it is checked once, whichever of two racing requests comes first.
 */
export async function takeChallenge(
  db: Database,
  challenge: string,
  purpose: ChallengeRow["purpose"],
  now: number,
): Promise<ChallengeRow | undefined> {
  const rows = await db
    .delete(webauthnChallenges)
    .where(
      and(
        eq(webauthnChallenges.challenge, challenge),
        eq(webauthnChallenges.purpose, purpose),
        gt(webauthnChallenges.expiresAt, now),
      ),
    )
    .returning();
  return rows[0];
}

/** Challenges nobody answered in time, up to `limit` at a time (the cron job's sweep). */
export const deleteExpiredChallenges = (db: Database, now: number, limit: number) =>
  deleteExpiredRows(
    db,
    { table: webauthnChallenges, key: webauthnChallenges.challenge, expiresAt: webauthnChallenges.expiresAt },
    now,
    limit,
  );
