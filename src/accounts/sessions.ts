import type { RegistrationResponseJSON } from "@simplewebauthn/server";
import type { BatchItem } from "drizzle-orm/batch";
import { randomBase62 } from "../crypto";
import { ApiError, notFound } from "../errors";
import type { Database } from "../storage/db";
import { insertPasskey } from "../storage/passkeys";
import {
  deleteOtherSessions,
  deleteSession,
  deleteSessionByToken,
  findSessionOwner,
  insertSession,
  listSessions,
  type NewSession,
  touchSession,
} from "../storage/sessions";
import { claimSignInLink, inviteAccountStatements } from "../storage/sign-in-links";
import type { SessionRow } from "../model/sign-in-schema";
import type { Caller } from "./callers";
import { generateKey, hashKey } from "./keys";
import { type Registrant, type RelyingParty, verifyRegistration } from "./passkey-ceremonies";

/*
 * Dashboard sessions: a random token in an HttpOnly cookie, kept as its SHA-256 in D1. A session
 * ends after two weeks unused, and a month after its sign-in whatever its use; the owner can end
 * any of them (and sign-out ends its own) at once, since every request looks its row up.
 */

const DAY = 86_400_000;
export const SESSION_IDLE_MS = 14 * DAY;
export const SESSION_MAX_MS = 30 * DAY;
/** A session's last use is written at most this often: a page's many requests make one write. */
const TOUCH_EVERY_MS = 3_600_000;

export interface StartedSession {
  /** The cookie's value: shown to the browser once, never stored. */
  token: string;
  expiresAt: number;
}

async function sessionRow(accountId: string, passkeyId: string | null, userAgent: string | null, now: number) {
  const token = `sess_${randomBase62(32)}`;
  const row: NewSession = {
    tokenHash: await hashKey(token),
    id: randomBase62(16),
    accountId,
    csrfToken: randomBase62(32),
    passkeyId,
    userAgent: userAgent?.slice(0, 300) ?? null,
    createdAt: now,
    lastSeenAt: now,
    expiresAt: now + SESSION_IDLE_MS,
  };
  return { token, row };
}

/** A new session after a sign-in with `passkeyId`: a new token every time (never one the browser had). */
export async function startSession(
  db: Database,
  accountId: string,
  passkeyId: string,
  userAgent: string | null,
  now: number,
): Promise<StartedSession> {
  const { token, row } = await sessionRow(accountId, passkeyId, userAgent, now);
  await insertSession(db, row);
  return { token, expiresAt: row.expiresAt };
}

/** The session the cookie's token opens, as a full-key caller of its account; null when none (or ended). */
export async function signedIn(
  db: Database,
  token: string,
  ip: string,
  now: number,
): Promise<{ caller: Caller; session: SessionRow } | null> {
  if (!token.startsWith("sess_")) return null;
  const owner = await findSessionOwner(db, await hashKey(token), ip, now);
  if (!owner) return null;
  const { session } = owner;
  if (now - session.lastSeenAt >= TOUCH_EVERY_MS)
    await touchSession(db, session.tokenHash, now, Math.min(session.createdAt + SESSION_MAX_MS, now + SESSION_IDLE_MS));
  const caller: Caller = {
    accountId: session.accountId,
    kind: "full",
    banned: owner.banned,
    ipBanned: owner.ipBanned,
    fullKeyHash: owner.fullKeyHash,
    // The session acts with the full key's rights, so it draws on that key's budgets.
    keyHash: owner.fullKeyHash,
  };
  return { caller, session };
}

/**
 * A passkey registered through a link, and the session it signs in: in one D1 batch with the
 * link's claim (and, for an invite, the account it makes), so that a link is used once and a
 * failure leaves nothing. A link used or expired meanwhile is a 410.
 */
export async function registerThroughLink(
  db: Database,
  rp: RelyingParty,
  registrant: Extract<Registrant, { link: unknown }>,
  answer: { response: RegistrationResponseJSON; passkeyName: string; accountName: string | null },
  userAgent: string | null,
  now: number,
): Promise<StartedSession & { accountId: string }> {
  const credential = await verifyRegistration(db, rp, registrant, answer.response, now);
  const { link } = registrant;
  const guard = { tokenHash: link.tokenHash, now };
  const { accountId } = credential;
  const { token, row } = await sessionRow(accountId, credential.id, userAgent, now);
  const account =
    link.kind === "invite"
      ? inviteAccountStatements(
          db,
          link.tokenHash,
          {
            id: accountId,
            name: answer.accountName ?? link.name ?? "New account",
            keyHashes: { full: await hashKey(generateKey("full")), upload: await hashKey(generateKey("upload")) },
          },
          now,
        )
      : [];
  const passkey = { ...credential, name: answer.passkeyName, createdAt: now };
  try {
    const claim = claimSignInLink(db, link.tokenHash, accountId, now);
    const rest: BatchItem<"sqlite">[] = [claim, insertPasskey(db, passkey, guard), insertSession(db, row, guard)];
    const [first, ...others] = [...account, ...rest] as BatchItem<"sqlite">[];
    const results = await db.batch([first!, ...others]);
    if ((results[account.length] as unknown[]).length === 0) throw linkGone();
  } catch (error) {
    if (String((error as Error)?.cause ?? error).includes("NOT NULL constraint failed: sign_in_links.created_at"))
      throw linkGone();
    throw error;
  }
  return { token, expiresAt: row.expiresAt, accountId };
}

const linkGone = () => new ApiError(410, "This link has been used already, or has expired.");

/** The account's current sessions, the last seen first. */
export const sessionsOf = (db: Database, accountId: string, now: number) => listSessions(db, accountId, now);

/** Ends the account's session `id` (a 404 when it has none of that id). */
export async function endSession(db: Database, accountId: string, id: string): Promise<void> {
  if (!(await deleteSession(db, accountId, id))) throw notFound("No such session.");
}

/** Ends every session of the account but the one asking. */
export const endOtherSessions = (db: Database, accountId: string, keep: SessionRow) =>
  deleteOtherSessions(db, accountId, keep.tokenHash);

/** Signing out: the session ends now, whatever copies of its cookie exist. */
export const endOwnSession = (db: Database, session: SessionRow) => deleteSessionByToken(db, session.tokenHash);
