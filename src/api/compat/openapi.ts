import { describeRoute } from "hono-openapi";
import { ACCEPTED_FORMATS_TEXT } from "../../media/sniff";
import { MAX_REQUEST_BYTES, megabytes } from "../../model/spec-limits";
import { cheveretoErrorSchema, cheveretoUploadSchema, lskyErrorSchema, lskyUploadSchema } from "./schemas";
import { json } from "../openapi/answers";
import { file } from "../openapi/requests";

/**
 * How the compatible endpoints are documented: each route's first handler, as the API's own are
 * (src/api/uploads/openapi.ts). Their request bodies go through the service's own streaming
 * readers, so they are written out here.
 */

const ALBUM_ID =
  "One of the account's albums (its 10-character id): the upload is added at its end; another account's or " +
  "an unknown album (or, for the upload-only key, one that does not accept uploads) is a 422, before the file is " +
  "stored when the field comes before it. Any other value (an id of another server) is ignored.";

const text = (description: string) => ({ type: "string" as const, description });

const cheveretoError = (description: string) => json(cheveretoErrorSchema, description);

const cheveretoFields = {
  key: text(
    "The API key, if not sent as X-API-Key or ?key=. In a multipart or urlencoded body it counts only before " +
      "`source` and any other file part, among the first 64 fields and within the body's first 64 KiB.",
  ),
  format: {
    type: "string" as const,
    enum: ["json", "txt", "redirect"],
    default: "json",
    description: "How a success is answered.",
  },
  title: text("Title (Chevereto's `name` is read as the title too)."),
  description: text("Description."),
  expiration: text("Until automatic deletion: seconds, or an ISO 8601 duration (PT5M, P3D, P1M = 30 days, P1Y)."),
  album_id: text(ALBUM_ID),
};

const cheveretoResponses = {
  200: json(cheveretoUploadSchema, "Uploaded (format=json); with format=txt, `url` alone as text/plain."),
  303: { description: "format=redirect: to the upload's page (`url_viewer`)." },
  401: cheveretoError("Missing or invalid key, or a `key` field after a file part or past the body's first 64 KiB."),
  403: cheveretoError("Account or IP banned from uploading."),
  405: cheveretoError("Another method (HEAD too: it would upload)."),
  413: cheveretoError(`Request over ${megabytes(MAX_REQUEST_BYTES)}.`),
  422: cheveretoError("No source, invalid base64, a link that cannot be downloaded, unsupported type, bad field."),
  429: cheveretoError("Rate limit exceeded; see Retry-After."),
};

const CHEVERETO =
  "Chevereto API v1 compatible upload, for tools made for Chevereto: the same pipeline, key kinds, limits and " +
  "rate limits as POST /. Errors carry Chevereto's `status_code`, `error` and `status_txt` beside the service's " +
  "`type` and `errors`, with the HTTP status that fits, whatever `format`.";

type Properties = Record<string, object>;

/** A form's request body: multipart always, and urlencoded too when its fields are given. */
const formBody = (multipart: Properties, required: string[], urlencoded?: Properties) => {
  const schema = (properties: Properties) => ({
    type: "object" as const,
    ...(required.length > 0 && { required }),
    properties,
  });
  return {
    required: true,
    content: {
      "multipart/form-data": { schema: schema(multipart) },
      ...(urlencoded && { "application/x-www-form-urlencoded": { schema: schema(urlencoded) } }),
    },
  };
};

export const describeCheveretoUpload = describeRoute({
  summary: "Upload one file (Chevereto API v1)",
  operationId: "cheveretoUpload",
  description:
    `${CHEVERETO} \`source\` is a file part, a link (http or https, downloaded as \`url\` is), or base64 text ` +
    `(decoded as it arrives; it counts toward the request's ${megabytes(MAX_REQUEST_BYTES)}). Fields may also be ` +
    "given in the query.",
  security: [{ apiKeyHeader: [] }, { apiKeyQuery: [] }],
  requestBody: formBody(
    {
      ...cheveretoFields,
      source: file(`The file (${ACCEPTED_FORMATS_TEXT}), or a link or base64 text as a plain field.`),
    },
    [],
    { ...cheveretoFields, source: text("A link, or the file in base64.") },
  ),
  responses: cheveretoResponses,
});

export const describeCheveretoLink = describeRoute({
  summary: "Upload one file by link (Chevereto API v1, GET)",
  operationId: "cheveretoUploadByLink",
  description:
    `${CHEVERETO} The GET form of Chevereto API v1: \`source\` must be a link (base64 needs POST). HEAD is ` +
    "refused, so that nothing that only looks at a URL uploads.",
  parameters: Object.entries({ ...cheveretoFields, source: text("A link (http or https) to the file.") }).map(
    ([name, schema]) => ({ name, in: "query" as const, required: name === "source", schema }),
  ),
  responses: cheveretoResponses,
});

const lskyError = (description: string) => json(lskyErrorSchema, description);

export const describeLskyUpload = describeRoute({
  summary: "Upload one file (Lsky Pro v1)",
  operationId: "lskyUpload",
  description:
    "Lsky Pro v1 compatible upload, for tools made for Lsky Pro (`Authorization: Bearer <key>`; X-API-Key and " +
    "?key= count too): the same pipeline, key kinds, limits and rate limits as POST /. Errors carry Lsky's " +
    "`status`, `message` and `data` beside the service's `type` and `errors`, with the HTTP status that fits.",
  security: [{ bearer: [] }, { apiKeyHeader: [] }, { apiKeyQuery: [] }],
  requestBody: formBody(
    {
      file: file(`The file (${ACCEPTED_FORMATS_TEXT}), up to ${megabytes(MAX_REQUEST_BYTES)}.`),
      permission: {
        type: "string" as const,
        enum: ["0", "1"],
        description: "1: public; 0: private. Omitted: unlisted.",
      },
      strategy_id: text("Accepted and ignored: the service has one storage."),
      album_id: text(ALBUM_ID),
    },
    ["file"],
  ),
  responses: {
    200: json(lskyUploadSchema, "Uploaded."),
    401: lskyError("Missing or invalid key."),
    403: lskyError("Account or IP banned from uploading."),
    413: lskyError(`Request over ${megabytes(MAX_REQUEST_BYTES)}.`),
    422: lskyError("No `file`, unsupported type, bad field."),
    429: lskyError("Rate limit exceeded; see Retry-After."),
  },
});
