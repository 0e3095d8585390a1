import { z } from "zod";
import { EXPIRES_IN_MIN, MAX_REQUEST_BYTES, MiB, PAGE_SIZE } from "../../config";
import { ACCEPTED_FORMATS_TEXT } from "../../media/sniff";
// Importing the schemas registers the response schemas (`.meta({ id })`) rendered below.
import { changeBody, chunkFields, listQuery, uploadFields } from "./schemas";

/**
 * The OpenAPI 3.1 description, generated from the zod schemas that validate requests and
 * describe responses. Request schemas are rendered as clients send them ("input"), responses
 * as the service returns them ("output").
 */
const input = (schema: z.ZodType) => z.toJSONSchema(schema, { io: "input", unrepresentable: "any" });

const REF = (id: string) => ({ $ref: `#/components/schemas/${id}` });

const error = (description: string) => ({
  description,
  content: { "application/json": { schema: REF("Error") } },
});

const json = (id: string, description = "Success") => ({
  description,
  content: { "application/json": { schema: REF(id) } },
});

const idParam = { name: "id", in: "path", required: true, schema: { type: "string" } };

const cached = new Map<number, Record<string, unknown>>();

function buildDocument(maxExpiry: number) {
  const { schemas } = z.toJSONSchema(z.globalRegistry, { uri: (id) => `#/components/schemas/${id}` });
  const uploadForm = input(uploadFields) as { properties: Record<string, Record<string, unknown>>; [k: string]: unknown };
  // This deployment's bound (EXPIRES_IN_MAX_SECONDS), which may be below the spec's year.
  uploadForm.properties.expires_in = {
    ...uploadForm.properties.expires_in,
    description: `Seconds until automatic deletion, ${EXPIRES_IN_MIN} to ${maxExpiry}.`,
    maximum: maxExpiry,
  };
  uploadForm.properties = {
    uploads: { type: "string", format: "binary", description: `The file (${ACCEPTED_FORMATS_TEXT}), up to 100MB.` },
    ...uploadForm.properties,
  };
  const listParams = Object.entries((input(listQuery) as { properties: Record<string, object> }).properties).map(
    ([name, schema]) => ({ name, in: "query", required: false, schema }),
  );
  const changeSchema = input(changeBody);
  const chunkForm = input(chunkFields) as { properties: Record<string, unknown>; required?: string[]; [k: string]: unknown };
  chunkForm.properties = {
    ...chunkForm.properties,
    chunk: { type: "string", format: "binary", description: "The piece's bytes, at most 5MB (5242880 bytes)." },
  };
  chunkForm.required = [...(chunkForm.required ?? []), "chunk"];

  return {
    openapi: "3.1.0",
    info: {
      title: "Image and video hosting API",
      version: "1.0.0",
      description:
        "Stores images and videos for an account. Every request needs an API key in `X-API-Key` " +
        "(or the `key` query parameter). Errors are `{type: \"error\", errors: string}`. " +
        `Requests over ${MAX_REQUEST_BYTES / MiB}MB get 413 (MB means MiB throughout). ` +
        "Booleans accept 1/0, true/false, yes/no, on/off. " +
        `Lists have ${PAGE_SIZE} items a page; a page past last_page is an empty list, a page below 1 is a 422. ` +
        "Every response of an operation carries X-RateLimit-Limit and X-RateLimit-Remaining (the budget closest " +
        "to running out); a 429 carries Retry-After in seconds. Pieces also draw on daily byte budgets per key and " +
        "per IP. Responses are `Cache-Control: private, no-store`. Titles and descriptions containing a blocked term " +
        "are refused (422), as are files whose content was flagged.",
    },
    servers: [{ url: "/api" }],
    security: [{ apiKeyHeader: [] }, { apiKeyQuery: [] }],
    paths: {
      "/": {
        post: {
          summary: "Upload one file",
          operationId: "upload",
          description:
            "Exactly one of `uploads`, `url`, `upload_id`. The type is decided from the file's bytes. " +
            "An identical file already uploaded by the account (not expiring, no allow_duplicate) is " +
            "answered with that upload and `duplicate: true`; nothing new is stored. Answered to the upload-only " +
            "key, `path` and `thumb` are unsigned (a password-protected upload's are refused without a signature).",
          requestBody: {
            required: true,
            content: {
              "multipart/form-data": { schema: uploadForm },
              "application/x-www-form-urlencoded": { schema: input(uploadFields) },
            },
          },
          responses: {
            "200": json("UploadResponse"),
            "401": error("Missing or invalid API key."),
            "403": error("Account or IP banned from uploading."),
            "413": error("Request over 100MB."),
            "422": error("Validation failure: no file, unsupported type, bad field."),
            "429": error("Rate limit exceeded; see Retry-After."),
            "500": error("Unexpected failure; safe to retry."),
          },
        },
        get: {
          summary: "List uploads, newest first",
          operationId: "list",
          parameters: listParams,
          responses: {
            "200": json("ListResponse"),
            "401": error("Missing or invalid key, or the upload-only key."),
            "422": error("Invalid page."),
            "429": error("Rate limit exceeded."),
          },
        },
      },
      "/chunk": {
        post: {
          summary: "Send one piece of a large file",
          operationId: "chunk",
          description:
            "Pieces may come in any order and in parallel; sending an index again replaces it. Both key " +
            "kinds may send pieces; the session belongs to the account whose key sent its first piece. " +
            "Finish with POST / and `upload_id` within 2 hours of the first piece; after that the " +
            "session and its pieces are discarded. The pieces may add up to 200MB.",
          requestBody: { required: true, content: { "multipart/form-data": { schema: chunkForm } } },
          responses: {
            "200": json("ChunkResponse"),
            "401": error("Missing or invalid API key."),
            "403": error("Account or IP banned from uploading."),
            "413": error("Piece over 5MB, or pieces adding up to more than 200MB."),
            "422": error("Bad field, index not below total, total differing from the session's, or an upload_id that is finished, expired or another account's."),
            "429": error("Rate limit exceeded (pieces per minute, or bytes of pieces per day per key or IP); see Retry-After."),
          },
        },
      },
      "/{id}/replace": {
        parameters: [idParam],
        post: {
          summary: "Replace the file behind an upload",
          operationId: "replace",
          description:
            "The new file (`uploads`, or `upload_id` of a file sent in pieces, or `url`) gets the same checks and " +
            "conversions as a new upload and may be of another type; id, page and links stay, `src` serves the new " +
            "file from the response on, and the previous file is removed. Answers with the updated upload. The new " +
            "bytes take over duplicate detection unless another upload of the account already holds them.",
          requestBody: {
            required: true,
            content: {
              "multipart/form-data": {
                schema: {
                  type: "object",
                  properties: {
                    uploads: { type: "string", format: "binary", description: "The new file, up to 100MB." },
                    upload_id: uploadForm.properties.upload_id,
                    url: uploadForm.properties.url,
                    keep_original: uploadForm.properties.keep_original,
                  },
                },
              },
            },
          },
          responses: {
            "200": json("UploadItemResponse", "The updated upload."),
            "401": error("Missing or invalid key, or the upload-only key."),
            "403": error("Account or IP banned from uploading."),
            "404": error("No such upload on this account."),
            "409": error("The upload changed while it was being replaced."),
            "413": error("Request over 100MB."),
            "422": error("Validation failure: no file, unsupported type, flagged content."),
            "429": error("Rate limit exceeded; see Retry-After."),
          },
        },
      },
      "/{id}": {
        parameters: [idParam],
        get: {
          summary: "Read one upload",
          operationId: "get",
          responses: {
            "200": json("UploadItemResponse"),
            "401": error("Missing or invalid key, or the upload-only key."),
            "404": error("No such upload on this account."),
            "429": error("Rate limit exceeded."),
          },
        },
        patch: {
          summary: "Change visibility, title or description",
          operationId: "change",
          description: "An empty title or description clears it.",
          requestBody: {
            required: true,
            content: {
              "application/json": { schema: changeSchema },
              "application/x-www-form-urlencoded": { schema: changeSchema },
              "multipart/form-data": { schema: changeSchema },
            },
          },
          responses: {
            "200": json("UploadItemResponse", "The updated upload."),
            "401": error("Missing or invalid key, or the upload-only key."),
            "404": error("No such upload on this account."),
            "422": error("Invalid field."),
            "429": error("Rate limit exceeded."),
          },
        },
        delete: {
          summary: "Delete an upload",
          operationId: "delete",
          responses: {
            "200": json("DeleteResponse"),
            "401": error("Missing or invalid key, or the upload-only key."),
            "404": error("No such upload on this account (or already deleted)."),
            "429": error("Rate limit exceeded."),
          },
        },
      },
    },
    components: {
      securitySchemes: {
        apiKeyHeader: { type: "apiKey", in: "header", name: "X-API-Key" },
        apiKeyQuery: { type: "apiKey", in: "query", name: "key" },
      },
      schemas: Object.fromEntries(
        Object.entries(schemas).map(([id, schema]) => {
          // Registry output carries $schema and a fragment $id; neither belongs in components.
          const { $schema: _, $id: __, ...rest } = schema as Record<string, unknown>;
          return [id, rest];
        }),
      ),
    },
  };
}

/** `servers` is absolute so that tools fetching the document from elsewhere still resolve it. */
export function openApiDocument(origin: string, maxExpiry: number) {
  let document = cached.get(maxExpiry);
  if (!document) cached.set(maxExpiry, (document = buildDocument(maxExpiry)));
  return { ...document, servers: [{ url: `${origin}/api` }] };
}
