import { describeRoute } from "hono-openapi";
import { MAX_FILE_BYTES, megabytes, PIECE_BYTES } from "../../model/spec-limits";
import { anyKey, banned, error, json } from "../openapi/answers";
import { fieldsOf, file, type ObjectSchema } from "../openapi/requests";
import { chunkFields, chunkResponseSchema } from "./schemas";

/** How POST /api/chunk is documented; see uploads/openapi.ts. */

const chunkText = fieldsOf(chunkFields);

const chunkForm: ObjectSchema = {
  ...chunkText,
  properties: {
    ...chunkText.properties,
    chunk: file(`The piece's bytes, at most ${megabytes(PIECE_BYTES)} (${PIECE_BYTES} bytes).`),
  },
  required: [...(chunkText.required ?? []), "chunk"],
};

export const describeChunk = describeRoute({
  summary: "Send one piece of a large file",
  operationId: "chunk",
  description:
    "Pieces may come in any order and in parallel; sending an index again replaces it. Both key " +
    "kinds may send pieces; the session belongs to the account whose key sent its first piece. " +
    "Finish with POST / and `upload_id` within 2 hours of the first piece; after that the " +
    `session and its pieces are discarded. The pieces may add up to ${megabytes(MAX_FILE_BYTES)}.`,
  requestBody: { required: true, content: { "multipart/form-data": { schema: chunkForm } } },
  responses: {
    200: json(chunkResponseSchema),
    401: anyKey,
    403: banned,
    413: error(`Piece over ${megabytes(PIECE_BYTES)}, or pieces adding up to more than ${megabytes(MAX_FILE_BYTES)}.`),
    422: error(
      "Bad field, index not below total, total differing from the session's, " +
        "or an upload_id that is finished, expired or another account's.",
    ),
    429: error("Rate limit exceeded (pieces per minute, or bytes of pieces per day per key or IP); see Retry-After."),
  },
});
