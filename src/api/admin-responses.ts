import type { Context } from "hono";
import { z } from "zod";
import { KEY_KINDS } from "../model/key-kinds";

/**
 * The success bodies of the operator API, `{type: "success", data}`, typed by these schemas so a
 * handler handing over the wrong shape fails to compile. They carry no `.meta({ id })`: that
 * would register them into the public OpenAPI document, which describes /api only.
 */

const account = z.object({ id: z.string(), name: z.string(), full_key: z.string(), upload_key: z.string() });
const key = z.object({ id: z.string(), kind: z.enum(KEY_KINDS), key: z.string() });
const accountBan = z.object({ id: z.string(), banned: z.boolean() });
const quotaSetting = z.union([z.number(), z.null(), z.literal("unlimited")]);
const accountQuotas = z.object({
  id: z.string(),
  quota_bytes: quotaSetting,
  quota_uploads: quotaSetting,
  bytes_used: z.number(),
  bytes_allowed: z.number().nullable(),
  uploads_used: z.number(),
  uploads_allowed: z.number().nullable(),
});
const ipBan = z.object({ ip: z.string(), banned: z.boolean() });
const blockedTerm = z.object({ term: z.string(), normalized: z.string() });
const unblockedTerm = z.object({ normalized: z.string(), blocked: z.literal(false) });
const flagged = z.object({
  id: z.string(),
  content_hash: z.string(),
  removed: z.array(z.string()),
  files_not_removed: z.array(z.string()),
});

function success<T>(c: Context, data: T, status: 200 | 201 = 200) {
  return c.json({ type: "success" as const, data }, status);
}

/** POST /admin/accounts: the account with both keys, shown this once. */
export const accountCreatedResponse = (c: Context, data: z.infer<typeof account>) => success(c, data, 201);

/** POST /admin/accounts/{id}/keys: the new key, shown this once. */
export const keyResponse = (c: Context, data: z.infer<typeof key>) => success(c, data);

/** PUT and DELETE /admin/accounts/{id}/ban. */
export const accountBanResponse = (c: Context, data: z.infer<typeof accountBan>) => success(c, data);

/** GET and PATCH /admin/accounts/{id}: its quotas as set (null: the default), and its usage against those in force. */
export const accountQuotasResponse = (c: Context, data: z.infer<typeof accountQuotas>) => success(c, data);

/** PUT and DELETE /admin/ip-bans/{ip}. */
export const ipBanResponse = (c: Context, data: z.infer<typeof ipBan>) => success(c, data);

/** GET /admin/blocked-terms. */
export const blockedTermsResponse = (c: Context, data: z.infer<typeof blockedTerm>[]) => success(c, data);

/** POST /admin/blocked-terms: 201 for a new term, 200 for one already blocked. */
export const blockedTermResponse = (c: Context, data: z.infer<typeof blockedTerm>, added: boolean) =>
  success(c, data, added ? 201 : 200);

/** DELETE /admin/blocked-terms/{term}. */
export const unblockedTermResponse = (c: Context, data: z.infer<typeof unblockedTerm>) => success(c, data);

/**
 * POST /admin/uploads/{id}/flag: the flagged content, every upload removed for it, and the stored
 * files of those uploads that could not be removed yet (usually none).
 */
export const flaggedResponse = (c: Context, data: z.infer<typeof flagged>) => success(c, data);
