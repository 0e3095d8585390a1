import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "@simplewebauthn/server";
import type { Context } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../env";
import { parseOrThrow } from "../../errors";
import { readFields } from "../../http/body";

/*
 * What the dashboard's passkey scripts send (browser/passkeys.js): a ceremony's answer as
 * @simplewebauthn/browser makes it, and the names typed in its form. The answer's shape is
 * checked here, bounded; what it proves is checked by @simplewebauthn/server.
 */

const b64url = z
  .string()
  .max(16_384)
  .regex(/^[A-Za-z0-9_-]*$/, "is not base64url");

const credential = {
  id: b64url.min(1),
  rawId: b64url.min(1),
  type: z.literal("public-key"),
  clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
  authenticatorAttachment: z.enum(["platform", "cross-platform"]).optional(),
};

const registration = z.object({
  ...credential,
  response: z.object({
    clientDataJSON: b64url,
    attestationObject: b64url,
    transports: z.array(z.string().max(32)).max(10).optional(),
  }),
});

const authentication = z.object({
  ...credential,
  response: z.object({
    clientDataJSON: b64url,
    authenticatorData: b64url,
    signature: b64url,
    userHandle: b64url.optional(),
  }),
});

const name = (what: string) => z.string().trim().min(1, `give the ${what} a name`).max(100);

export const registrationFields = z.object({
  response: registration,
  passkey_name: name("passkey"),
  account_name: name("account").optional(),
});

const namesOnly = registrationFields.omit({ response: true });

/** The names a registration's options are asked with (the form's fields; the answer comes later). */
export async function readNames(c: Context<AppEnv>) {
  return parseOrThrow(namesOnly, await readFields(c.req.raw));
}

export async function readRegistration(c: Context<AppEnv>) {
  const fields = parseOrThrow(registrationFields, await readFields(c.req.raw));
  return { ...fields, response: fields.response as RegistrationResponseJSON };
}

export async function readAuthentication(c: Context<AppEnv>): Promise<AuthenticationResponseJSON> {
  const fields = parseOrThrow(z.object({ response: authentication }), await readFields(c.req.raw));
  return fields.response as AuthenticationResponseJSON;
}
