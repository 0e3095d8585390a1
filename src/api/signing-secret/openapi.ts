import { describeRoute } from "hono-openapi";
import { error, json, throttled } from "../openapi/answers";
import { signingSecretResponseSchema } from "./schemas";

/** What the signing secret's operations (index.ts) are documented as; see uploads/openapi.ts. */

const fullKey = error("Missing or invalid key, or the upload-only key (the secret is the full key's).");

export const describeSigningSecretGet = describeRoute({
  summary: "Read the account's signing secret",
  operationId: "getSigningSecret",
  description:
    "Extension. The secret that signs image transform URLs (`src?...&s=`), which may then ask for any size, " +
    "quality or blur within the bounds rather than only the ladder's. Made on the first read; the same one is " +
    "answered until it is rotated.",
  responses: { 200: json(signingSecretResponseSchema), 401: fullKey, 429: throttled },
});

export const describeSigningSecretRotate = describeRoute({
  summary: "Rotate the account's signing secret",
  operationId: "rotateSigningSecret",
  description:
    "Extension. A new secret in place of the old one: every URL signed with the old one is refused (403) from " +
    "now on, with no overlap. Copies its URLs made stay stored and are served to URLs signed anew.",
  responses: { 200: json(signingSecretResponseSchema, "The new secret."), 401: fullKey, 429: throttled },
});
