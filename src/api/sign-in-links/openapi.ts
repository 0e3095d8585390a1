import { describeRoute } from "hono-openapi";
import { error, json, throttled } from "../openapi/answers";
import { signInLinkResponseSchema } from "./schemas";

/** What the sign-in link operation (index.ts) is documented as; see uploads/openapi.ts. */

export const describeSignInLinkCreate = describeRoute({
  summary: "Make a link that adds a passkey to the account",
  operationId: "createSignInLink",
  description:
    "Extension. A single-use link, valid for an hour, that registers a passkey for this account in a browser " +
    "and signs it in to the dashboard (`/app`): how an account made with keys gets its first passkey. Anyone " +
    "holding the link can add a passkey to the account until it is used, so give it only to its owner.",
  responses: {
    201: json(signInLinkResponseSchema, "The link, shown once."),
    401: error("Missing or invalid key, or the upload-only key (links are the full key's)."),
    429: throttled,
  },
});
