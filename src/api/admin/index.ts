import { Hono } from "hono";
import { z } from "zod";
import { createAccount, regenerateKey, setAccountBanned } from "../../accounts/accounts";
import { getAccountQuotas, setAccountQuotas } from "../../accounts/quotas";
import { secretsEqual } from "../../crypto";
import type { AppEnv } from "../../env";
import { requestStores } from "../../deps";
import { ApiError, notFound, parseOrThrow, unauthorized } from "../../errors";
import { readFields, smallBody } from "../../http/body";
import { throttledAdminToken } from "../../http/throttles/guesses";
import { validate } from "../../http/validation";
import { flagUpload } from "../../uploads/flag";
import { blockedTerms, blockTerm, unblockTerm } from "../../moderation/blocked-terms";
import { banAddress, unbanAddress } from "../../accounts/ip-bans";
import { KEY_KINDS } from "../../model/key-kinds";
import { settingsOf } from "../../settings";
import { methodNotAllowed } from "../../http/method-not-allowed";
import {
  accountBanResponseSchema,
  accountCreatedResponseSchema,
  accountQuotasResponseSchema,
  blockedTermResponseSchema,
  blockedTermsResponseSchema,
  flaggedResponseSchema,
  ipBanResponseSchema,
  keyResponseSchema,
  unblockedTermResponseSchema,
} from "./schemas";
import { envelope } from "../envelope";
import { signInLinkResponseSchema } from "../sign-in-links/schemas";
import { INVITE_HOURS, makeInvite } from "../../accounts/sign-in-links";
import { publicOrigin } from "../../http/request-info";
import { isoTimestamp } from "../../time";

const createAccountBody = z.object({ name: z.string().trim().min(1, "is required").max(100) });
const keyBody = z.object({ kind: z.enum(KEY_KINDS, { message: "must be full or upload" }) });
const termBody = z.object({ term: z.string().trim().min(1, "is required").max(200) });
const flagBody = z.object({ reason: z.string().trim().max(500).optional() });
/** A quota: whole bytes or uploads (0 allows none), null for the configured default, or "unlimited". */
const quotaSetting = z.union([z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), z.null(), z.literal("unlimited")], {
  message: 'must be a whole number ≥ 0, null (the default) or "unlimited"',
});
const quotasBody = z
  .object({ quota_bytes: quotaSetting.optional(), quota_uploads: quotaSetting.optional() })
  .refine((b) => b.quota_bytes !== undefined || b.quota_uploads !== undefined, {
    message: "give quota_bytes, quota_uploads or both",
  });
const inviteBody = z.object({
  name: z.string().trim().min(1).max(100).optional(),
  quota_bytes: quotaSetting.optional(),
  quota_uploads: quotaSetting.optional(),
  expires_in_hours: z.number().int().min(1).max(INVITE_HOURS.max).optional(),
});
const ipParam = z.object({
  ip: z.string().regex(/^[0-9a-fA-F:.]{2,45}$/, { message: "must be an IPv4 or IPv6 address" }),
});

/**
 * The operator API. It does not exist (404) unless the ADMIN_TOKEN secret is set (32 characters
 * or more), and then needs `Authorization: Bearer <ADMIN_TOKEN>`; wrong tokens are throttled per
 * client IP, which then waits before any token of it is looked at.
 */
export const admin = new Hono<AppEnv>()
  .use("*", async (c, next) => {
    const token = settingsOf(c.env).adminToken;
    if (!token) throw notFound();
    const given = /^Bearer\s+(.+)$/i.exec(c.req.header("Authorization") ?? "")?.[1] ?? "";
    const guess = await throttledAdminToken(c, () => secretsEqual(given, token));
    if (guess.outcome === "wait") {
      const wait = String(guess.retryAfterSeconds);
      throw new ApiError(429, `Too many wrong admin tokens from this address. Retry in ${wait} s.`, {
        "Retry-After": wait,
      });
    }
    if (guess.outcome === "wrong") throw unauthorized("Missing or invalid admin token.");
    await next();
  })
  .use("*", smallBody)
  .post("/accounts", validate("json", createAccountBody), async (c) => {
    const account = await createAccount(c.var.db, c.req.valid("json").name, c.var.now());
    return envelope(c, accountCreatedResponseSchema, { data: account }, 201);
  })
  .all("/accounts", methodNotAllowed("POST"))
  .post("/invites", validate("json", inviteBody), async (c) => {
    const { name, quota_bytes, quota_uploads, expires_in_hours } = c.req.valid("json");
    const invite = { name, quotaBytes: quota_bytes, quotaUploads: quota_uploads, expiresInHours: expires_in_hours };
    const link = await makeInvite(c.var.db, invite, c.var.now());
    const data = { url: `${publicOrigin(c)}/app/join/${link.token}`, expires_at: isoTimestamp(link.expiresAt) };
    return envelope(c, signInLinkResponseSchema, { msg: "success", data }, 201);
  })
  .all("/invites", methodNotAllowed("POST"))
  .get("/accounts/:id", async (c) => {
    const data = await getAccountQuotas(c.var.db, c.req.param("id"), settingsOf(c.env).quotas);
    return envelope(c, accountQuotasResponseSchema, { data });
  })
  .patch("/accounts/:id", validate("json", quotasBody), async (c) => {
    const quotas = settingsOf(c.env).quotas;
    const data = await setAccountQuotas(c.var.db, c.req.param("id"), c.req.valid("json"), quotas);
    return envelope(c, accountQuotasResponseSchema, { data });
  })
  .all("/accounts/:id", methodNotAllowed("GET", "PATCH"))
  .post("/accounts/:id/keys", validate("json", keyBody), async (c) => {
    const key = await regenerateKey(c.var.db, c.req.param("id"), c.req.valid("json").kind, c.var.now());
    return envelope(c, keyResponseSchema, { data: key });
  })
  .all("/accounts/:id/keys", methodNotAllowed("POST"))
  .put("/accounts/:id/ban", async (c) => {
    const data = await setAccountBanned(c.var.db, c.req.param("id"), true, c.var.now());
    return envelope(c, accountBanResponseSchema, { data });
  })
  .delete("/accounts/:id/ban", async (c) => {
    const data = await setAccountBanned(c.var.db, c.req.param("id"), false, c.var.now());
    return envelope(c, accountBanResponseSchema, { data });
  })
  .all("/accounts/:id/ban", methodNotAllowed("PUT", "DELETE"))
  .put("/ip-bans/:ip", validate("param", ipParam), async (c) => {
    const data = await banAddress(c.var.db, c.req.valid("param").ip, c.var.now());
    return envelope(c, ipBanResponseSchema, { data });
  })
  .delete("/ip-bans/:ip", validate("param", ipParam), async (c) => {
    return envelope(c, ipBanResponseSchema, { data: await unbanAddress(c.var.db, c.req.valid("param").ip) });
  })
  .all("/ip-bans/:ip", methodNotAllowed("PUT", "DELETE"))
  .get("/blocked-terms", async (c) => {
    return envelope(c, blockedTermsResponseSchema, { data: await blockedTerms(c.var.db) });
  })
  .post("/blocked-terms", validate("json", termBody), async (c) => {
    const { term, added } = await blockTerm(c.var.db, c.req.valid("json").term, c.var.now());
    return envelope(c, blockedTermResponseSchema, { data: term }, added ? 201 : 200);
  })
  .all("/blocked-terms", methodNotAllowed("GET", "POST"))
  .delete("/blocked-terms/:term", async (c) => {
    return envelope(c, unblockedTermResponseSchema, { data: await unblockTerm(c.var.db, c.req.param("term")) });
  })
  .all("/blocked-terms/:term", methodNotAllowed("DELETE"))
  .post("/uploads/:id/flag", async (c) => {
    const { reason } = parseOrThrow(flagBody, await readFields(c.req.raw));
    const data = await flagUpload(requestStores(c), c.req.param("id"), reason ?? null);
    return envelope(c, flaggedResponseSchema, { data });
  })
  .all("/uploads/:id/flag", methodNotAllowed("POST"));
