import { describeRoute } from "hono-openapi";
import { error, json, throttled } from "../openapi/answers";
import { keyRotateResponseSchema } from "./schemas";

/** What the key operation (index.ts) is documented as; see uploads/openapi.ts. */

export const describeKeyRotate = describeRoute({
  summary: "Replace one of the account's keys",
  operationId: "rotateKey",
  description:
    "Extension. `kind` (`full` or `upload`): a new key of that kind in place of the old one, which is refused " +
    "(401) from this answer on, with no overlap. Rotating the full key with the full key itself is allowed; the " +
    "answer is then the only place the new one is shown. JSON, urlencoded or multipart.",
  responses: {
    200: json(keyRotateResponseSchema, "The new key, shown once."),
    401: error("Missing or invalid key, or the upload-only key (keys are the full key's)."),
    422: error("`kind` is not full or upload."),
    429: throttled,
  },
});
