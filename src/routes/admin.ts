import { Hono } from "hono";
import { z } from "zod";
import { createAccount, regenerateKey, setAccountBanned } from "../accounts/accounts";
import { secretsEqual } from "../crypto";
import type { AppEnv } from "../env";
import { notFound, unauthorized } from "../errors";
import { smallBody } from "../http/body";
import { validate } from "../http/validation";
import { banIp, unbanIp } from "../storage/accounts";
import { KEY_KINDS } from "../storage/schema";
import { methodNotAllowed } from "./method-not-allowed";

const createAccountBody = z.object({ name: z.string().trim().min(1, "is required").max(100) });
const keyBody = z.object({ kind: z.enum(KEY_KINDS, { message: "must be full or upload" }) });
const ipParam = z.object({
  ip: z.string().regex(/^[0-9a-fA-F:.]{2,45}$/, { message: "must be an IPv4 or IPv6 address" }),
});

/**
 * The operator API. It does not exist (404) unless the ADMIN_TOKEN secret is set, and then
 * needs `Authorization: Bearer <ADMIN_TOKEN>`.
 */
export const admin = new Hono<AppEnv>()
  .use("*", async (c, next) => {
    const token = c.env.ADMIN_TOKEN;
    if (!token) throw notFound();
    const given = /^Bearer\s+(.+)$/i.exec(c.req.header("Authorization") ?? "")?.[1] ?? "";
    if (!(await secretsEqual(given, token))) throw unauthorized("Missing or invalid admin token.");
    await next();
  })
  .use("*", smallBody)
  .post("/accounts", validate("json", createAccountBody), async (c) => {
    const account = await createAccount(c.var.db, c.req.valid("json").name, Date.now());
    return c.json({ type: "success" as const, data: account }, 201);
  })
  .all("/accounts", methodNotAllowed("POST"))
  .post("/accounts/:id/keys", validate("json", keyBody), async (c) => {
    const key = await regenerateKey(c.var.db, c.req.param("id"), c.req.valid("json").kind, Date.now());
    return c.json({ type: "success" as const, data: key });
  })
  .all("/accounts/:id/keys", methodNotAllowed("POST"))
  .put("/accounts/:id/ban", async (c) => {
    return c.json({ type: "success" as const, data: await setAccountBanned(c.var.db, c.req.param("id"), true, Date.now()) });
  })
  .delete("/accounts/:id/ban", async (c) => {
    return c.json({ type: "success" as const, data: await setAccountBanned(c.var.db, c.req.param("id"), false, Date.now()) });
  })
  .all("/accounts/:id/ban", methodNotAllowed("PUT", "DELETE"))
  .put("/ip-bans/:ip", validate("param", ipParam), async (c) => {
    const { ip } = c.req.valid("param");
    await banIp(c.var.db, ip, Date.now());
    return c.json({ type: "success" as const, data: { ip, banned: true } });
  })
  .delete("/ip-bans/:ip", validate("param", ipParam), async (c) => {
    const { ip } = c.req.valid("param");
    if (!(await unbanIp(c.var.db, ip))) throw notFound("That IP address is not banned.");
    return c.json({ type: "success" as const, data: { ip, banned: false } });
  })
  .all("/ip-bans/:ip", methodNotAllowed("PUT", "DELETE"));
