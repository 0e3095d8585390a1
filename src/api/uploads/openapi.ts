import { describeRoute } from "hono-openapi";
import { ACCEPTED_FORMATS_TEXT } from "../../media/sniff";
import { MAX_REQUEST_BYTES, megabytes } from "../../model/spec-limits";
import { changeBody, uploadFields } from "../../uploads/schemas/requests";
import { deleteResponseSchema } from "../../uploads/schemas/resources";
import { anyKey, banned, error, json, throttled } from "../openapi/answers";
import { fieldsBody, fieldsOf, file, type ObjectSchema, queryParameters } from "../openapi/requests";
import { listQuery, listResponseSchema, uploadItemResponseSchema } from "../schemas";
import { uploadResponseSchema, usageResponseSchema } from "./schemas";

/**
 * What each operation on uploads is documented as. The router places one of these before an
 * operation's handlers; its path and method come from the route itself. Response bodies are the
 * schemas its answers are typed against (envelope.ts), rendered as the service sends them
 * ("output"). The other resources' descriptions are beside their routes (pieces/, albums/, tus/,
 * compat/).
 */

const uploadText = fieldsOf(uploadFields);

/** POST /api as a multipart form: the file as `uploads`, or one of the other sources. */
const uploadForm: ObjectSchema = {
  ...uploadText,
  properties: {
    uploads: file(`The file (${ACCEPTED_FORMATS_TEXT}), up to ${megabytes(MAX_REQUEST_BYTES)}.`),
    ...uploadText.properties,
  },
};

/** POST /api without a file: the same fields as a plain form. */
const uploadUrlEncoded: ObjectSchema = uploadText;

/** POST /api/{id}/replace: a new file from any source, and whether to keep it as sent. */
const replaceForm: ObjectSchema = {
  type: "object",
  properties: {
    uploads: file(`The new file, up to ${megabytes(MAX_REQUEST_BYTES)}.`),
    upload_id: uploadText.properties.upload_id!,
    url: uploadText.properties.url!,
    keep_original: uploadText.properties.keep_original!,
  },
};

const fullKey = error("Missing or invalid key, or the upload-only key.");
const noSuchUpload = error("No such upload on this account.");
const tooLarge = error(
  `Request over ${megabytes(MAX_REQUEST_BYTES)}, or the file would take the account past its quota ` +
    "(the message says what is used and allowed; nothing is stored).",
);
const throttledRetry = error("Rate limit exceeded; see Retry-After.");

export const describeUpload = describeRoute({
  summary: "Upload one file",
  operationId: "upload",
  description:
    "Exactly one of `uploads`, `url`, `upload_id`. The type is decided from the file's bytes. " +
    "An identical file already uploaded by the account (not expiring, no allow_duplicate) is " +
    "answered with that upload and `duplicate: true`; nothing new is stored. Answered to the upload-only " +
    "key, `path` and `thumb` are unsigned (a password-protected upload's are refused without a signature). " +
    "Extension: a request whose Accept prefers text/plain to application/json is answered with `src` alone " +
    "as text/plain (no Accept, `*/*` or equal qualities keep JSON); errors stay JSON.",
  requestBody: {
    required: true,
    content: {
      "multipart/form-data": { schema: uploadForm },
      "application/x-www-form-urlencoded": { schema: uploadUrlEncoded },
    },
  },
  responses: {
    200: {
      description: "Success",
      content: {
        ...json(uploadResponseSchema).content,
        "text/plain": { schema: { type: "string", format: "uri", description: "`src` alone." } },
      },
    },
    401: anyKey,
    403: banned,
    413: tooLarge,
    422: error("Validation failure: no file, unsupported type, bad field."),
    429: throttledRetry,
    500: error("Unexpected failure; safe to retry."),
  },
});

export const describeList = describeRoute({
  summary: "List uploads, newest first",
  operationId: "list",
  description:
    "By `page`, as the spec says (a deep page reads every upload before it), or (extension) by `cursor`: the " +
    "`meta.next_cursor` of the page before, which reads only its own page however deep. Both at once is a 422.",
  parameters: queryParameters(listQuery),
  responses: {
    200: json(listResponseSchema),
    401: fullKey,
    422: error("Invalid page or cursor (one of another list, or made up), or both given."),
    429: throttled,
  },
});

export const describeReplace = describeRoute({
  summary: "Replace the file behind an upload",
  operationId: "replace",
  description:
    "The new file (`uploads`, or `upload_id` of a file sent in pieces, or `url`) gets the same checks and " +
    "conversions as a new upload and may be of another type; id, page and links stay, `src` serves the new " +
    "file from the response on, and the previous file is removed. Answers with the updated upload. The new " +
    "bytes take over duplicate detection unless another upload of the account already holds them.",
  requestBody: { required: true, content: { "multipart/form-data": { schema: replaceForm } } },
  responses: {
    200: json(uploadItemResponseSchema, "The updated upload."),
    401: fullKey,
    403: banned,
    404: noSuchUpload,
    409: error("The upload changed while it was being replaced."),
    413: tooLarge,
    422: error("Validation failure: no file, unsupported type, flagged content."),
    429: throttledRetry,
  },
});

export const describeGet = describeRoute({
  summary: "Read one upload",
  operationId: "get",
  responses: {
    200: json(uploadItemResponseSchema),
    401: fullKey,
    404: noSuchUpload,
    429: throttled,
  },
});

export const describeChange = describeRoute({
  summary: "Change visibility, title or description",
  operationId: "change",
  description: "An empty title or description clears it.",
  requestBody: fieldsBody(changeBody),
  responses: {
    200: json(uploadItemResponseSchema, "The updated upload."),
    401: fullKey,
    404: noSuchUpload,
    422: error("Invalid field."),
    429: throttled,
  },
});

export const describeDelete = describeRoute({
  summary: "Delete an upload",
  operationId: "delete",
  responses: {
    200: json(deleteResponseSchema),
    401: fullKey,
    404: error("No such upload on this account (or already deleted)."),
    429: throttled,
  },
});

export const describeUsage = describeRoute({
  summary: "The account's usage and quotas (extension)",
  operationId: "usage",
  description:
    "Bytes stored and number of uploads, against the account's quotas (null: no limit). Counted are the " +
    "files of its uploads as stored (after conversion), until they are deleted or removed by expiry; " +
    "thumbnails and sized copies are not. Either key kind.",
  responses: {
    200: json(usageResponseSchema),
    401: anyKey,
    429: throttled,
  },
});
