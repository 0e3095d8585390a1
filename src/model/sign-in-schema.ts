import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { accounts } from "./schema";

/**
 * Signing in to the dashboard: passkeys only (WebAuthn), no passwords. Timestamps are Unix
 * milliseconds (UTC), as in schema.ts. Every secret a browser holds (a session's cookie, a link's
 * token) is kept as its SHA-256 alone, as API keys are.
 */

/** A passkey registered to an account: the public half of a WebAuthn credential. */
export const passkeys = sqliteTable(
  "passkeys",
  {
    /** The credential's id, base64url, as the authenticator names it. */
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    /** The COSE public key, as the registration gave it, base64url. */
    publicKey: text("public_key").notNull(),
    /** The authenticator's signature counter at the last sign-in (0 for those that keep none). */
    counter: integer("counter").notNull().default(0),
    /** A JSON array of the transports the browser reported (usb, internal, hybrid...). */
    transports: text("transports"),
    /** What the person called it ("Laptop", "Phone"). */
    name: text("name").notNull(),
    createdAt: integer("created_at").notNull(),
    lastUsedAt: integer("last_used_at"),
  },
  (t) => [index("passkeys_account").on(t.accountId, t.createdAt)],
);

/** A signed-in browser: the cookie's token is `sess_` and 32 base62 characters. */
export const sessions = sqliteTable(
  "sessions",
  {
    /** SHA-256 (hex) of the cookie's token. */
    tokenHash: text("token_hash").primaryKey(),
    /** What lists and revocations name the session by: not the token, which never leaves the cookie. */
    id: text("id").notNull().unique(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    /** The token every state-changing request of this session must carry (double submit, in the page). */
    csrfToken: text("csrf_token").notNull(),
    /** The passkey it signed in with (null once that passkey is removed). */
    passkeyId: text("passkey_id"),
    userAgent: text("user_agent"),
    createdAt: integer("created_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [index("sessions_account").on(t.accountId, t.createdAt), index("sessions_expiry").on(t.expiresAt)],
);

/**
 * A single-use link that registers a passkey: an operator's invite (which makes the account when
 * used) or one an account makes with its full key for its own first passkey.
 */
export const signInLinks = sqliteTable(
  "sign_in_links",
  {
    /** SHA-256 (hex) of the link's token. */
    tokenHash: text("token_hash").primaryKey(),
    kind: text("kind", { enum: ["invite", "passkey"] }).notNull(),
    /** A passkey link's account; an invite's once used (null until then). */
    accountId: text("account_id").references(() => accounts.id, { onDelete: "cascade" }),
    /** An invite's name for the account it makes (the person may change it). */
    name: text("name"),
    /** An invite's quotas for the account it makes, as accounts' columns take them (null: the default). */
    quotaBytes: integer("quota_bytes"),
    quotaUploads: integer("quota_uploads"),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    usedAt: integer("used_at"),
  },
  (t) => [index("sign_in_links_expiry").on(t.expiresAt)],
);

/**
 * A WebAuthn challenge handed to a browser, kept until its answer comes back (once) or it
 * expires. What it is for says which ceremony may use it: signing in, or registering a passkey
 * through a link (`linkHash`) or a session (`accountId`).
 */
export const webauthnChallenges = sqliteTable(
  "webauthn_challenges",
  {
    /** The challenge itself, base64url: random, so it is its own key. */
    challenge: text("challenge").primaryKey(),
    purpose: text("purpose", { enum: ["sign-in", "register"] }).notNull(),
    /** For a registration: the account it adds to (made by an invite: the id it will have). */
    accountId: text("account_id"),
    /** For a registration through a link: the link's token hash. */
    linkHash: text("link_hash"),
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [index("webauthn_challenges_expiry").on(t.expiresAt)],
);

export type PasskeyRow = typeof passkeys.$inferSelect;
export type SessionRow = typeof sessions.$inferSelect;
export type SignInLinkRow = typeof signInLinks.$inferSelect;
