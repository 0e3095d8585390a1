import { randomBase62 } from "../crypto";
import { ApiError, notFound } from "../errors";
import type { Database } from "../storage/db";
import { findSignInLink, insertSignInLink } from "../storage/sign-in-links";
import type { SignInLinkRow } from "../model/sign-in-schema";
import { hashKey } from "./keys";
import { type QuotaSetting, storedOf } from "./quotas";

/*
 * Single-use links that register a passkey (sign-in-schema.ts): an operator's invite, which makes
 * an account, or a link an account makes with its full key for a passkey of its own. The token is
 * shown once, in the link; only its SHA-256 is kept, as for API keys.
 */

const HOUR = 3_600_000;
/** An invite lasts a week unless the operator says otherwise (at most 30 days). */
export const INVITE_HOURS = { default: 7 * 24, max: 30 * 24 };
/** A link an account makes for itself is used at once, by the person holding its full key. */
export const PASSKEY_LINK_MS = HOUR;

const newToken = () => `sil_${randomBase62(32)}`;

export interface MadeLink {
  token: string;
  expiresAt: number;
}

export async function makeInvite(
  db: Database,
  invite: { name?: string; quotaBytes?: QuotaSetting; quotaUploads?: QuotaSetting; expiresInHours?: number },
  now: number,
): Promise<MadeLink> {
  const token = newToken();
  const expiresAt = now + (invite.expiresInHours ?? INVITE_HOURS.default) * HOUR;
  await insertSignInLink(db, {
    tokenHash: await hashKey(token),
    kind: "invite",
    name: invite.name ?? null,
    quotaBytes: storedOf(invite.quotaBytes) ?? null,
    quotaUploads: storedOf(invite.quotaUploads) ?? null,
    createdAt: now,
    expiresAt,
  });
  return { token, expiresAt };
}

export async function makePasskeyLink(db: Database, accountId: string, now: number): Promise<MadeLink> {
  const token = newToken();
  const expiresAt = now + PASSKEY_LINK_MS;
  await insertSignInLink(db, {
    tokenHash: await hashKey(token),
    kind: "passkey",
    accountId,
    createdAt: now,
    expiresAt,
  });
  return { token, expiresAt };
}

/**
 * The link `token` opens, while it can still be used: an unknown token is a 404, a used or
 * expired one a 410 (Gone), which the page says in words.
 */
export async function usableLink(db: Database, token: string, now: number): Promise<SignInLinkRow> {
  const link = token.startsWith("sil_") ? await findSignInLink(db, await hashKey(token)) : undefined;
  if (!link) throw notFound("No such link.");
  if (link.usedAt !== null) throw new ApiError(410, "This link has been used already.");
  if (link.expiresAt <= now) throw new ApiError(410, "This link has expired.");
  return link;
}
