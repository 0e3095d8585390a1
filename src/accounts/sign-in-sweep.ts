import type { Stores } from "../storage/stores";
import { deleteExpiredSessions } from "../storage/sessions";
import { deleteExpiredSignInLinks } from "../storage/sign-in-links";
import { deleteExpiredChallenges } from "../storage/webauthn-challenges";

/**
 * The cron job's sweep of what signing in leaves: challenges never answered (kept five minutes),
 * sessions past their expiry, and links past theirs, used or not; up to `limit` of each a run, in
 * three statements. Each is refused when read past its time anyway: the sweep only keeps the
 * tables small.
 */
export async function sweepSignIns({ db, now }: Pick<Stores, "db" | "now">, limit: number): Promise<number> {
  const at = now();
  const counts = await Promise.all([
    deleteExpiredChallenges(db, at, limit),
    deleteExpiredSessions(db, at, limit),
    deleteExpiredSignInLinks(db, at, limit),
  ]);
  return counts.reduce((a, b) => a + b, 0);
}
