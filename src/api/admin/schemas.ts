import { z } from "zod";
import { KEY_KINDS } from "../../model/key-kinds";

/**
 * The success answers of the operator API, `{type: "success", data}`, which type what its
 * handlers hand to the envelope. They carry no `.meta({ id })`: that would register them into the
 * public OpenAPI document, which describes /api only.
 */

const success = <T extends z.ZodType>(data: T) => z.object({ type: z.literal("success"), data });

const quotaSetting = z.union([z.number(), z.null(), z.literal("unlimited")]);
const blockedTerm = z.object({ term: z.string(), normalized: z.string() });

/** POST /admin/accounts: the account with both keys, shown this once. */
export const accountCreatedResponseSchema = success(
  z.object({ id: z.string(), name: z.string(), full_key: z.string(), upload_key: z.string() }),
);

/** POST /admin/accounts/{id}/keys: the new key, shown this once. */
export const keyResponseSchema = success(z.object({ id: z.string(), kind: z.enum(KEY_KINDS), key: z.string() }));

/** PUT and DELETE /admin/accounts/{id}/ban. */
export const accountBanResponseSchema = success(z.object({ id: z.string(), banned: z.boolean() }));

/** GET and PATCH /admin/accounts/{id}: its quotas as set (null: the default), and its usage against those in force. */
export const accountQuotasResponseSchema = success(
  z.object({
    id: z.string(),
    quota_bytes: quotaSetting,
    quota_uploads: quotaSetting,
    bytes_used: z.number(),
    bytes_allowed: z.number().nullable(),
    uploads_used: z.number(),
    uploads_allowed: z.number().nullable(),
  }),
);

/** PUT and DELETE /admin/ip-bans/{ip}. */
export const ipBanResponseSchema = success(z.object({ ip: z.string(), banned: z.boolean() }));

/** GET /admin/blocked-terms. */
export const blockedTermsResponseSchema = success(z.array(blockedTerm));

/** POST /admin/blocked-terms: 201 for a new term, 200 for one already blocked. */
export const blockedTermResponseSchema = success(blockedTerm);

/** DELETE /admin/blocked-terms/{term}. */
export const unblockedTermResponseSchema = success(z.object({ normalized: z.string(), blocked: z.literal(false) }));

/**
 * POST /admin/uploads/{id}/flag: the flagged content, every upload removed for it, and the stored
 * files of those uploads that could not be removed yet (usually none).
 */
export const flaggedResponseSchema = success(
  z.object({
    id: z.string(),
    content_hash: z.string(),
    removed: z.array(z.string()),
    files_not_removed: z.array(z.string()),
  }),
);
