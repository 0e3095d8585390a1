import { describeRoute } from "hono-openapi";
import { MAX_FILE_BYTES, megabytes } from "../../model/spec-limits";
import { TUS_LIFETIME_MS } from "../../uploads/intake/tus/lifecycle";
import { inReadingOrder, OPTION_FIELDS } from "../../uploads/schemas/option-fields";
import { uploadItemResponseSchema } from "../schemas";
import { anyKey, error, json } from "../openapi/answers";
import { TUS_EXTENSIONS, TUS_VERSION } from "./protocol";

/**
 * The tus 1.0 endpoint's operations (extension; docs/api.md, "Resumable uploads over tus"). Their
 * answers are mostly headers, which these describe; errors carry the service's envelope.
 */

const header = (description: string, type: "string" | "integer" = "string") => ({ description, schema: { type } });

const tusResumable = { required: true, schema: { type: "string" as const, enum: [TUS_VERSION] } };
const common = {
  401: anyKey,
  404: error("No such tus upload for this account (or it was terminated)."),
  410: error(
    "The upload expired unfinished, or its stored options can no longer be read back (it can never be " +
      "finished); its bytes were removed. Create a new upload.",
  ),
  412: error(`Tus-Resumable is not ${TUS_VERSION}.`),
  429: error("Rate limit exceeded (pieces per minute, or bytes of pieces per day); see Retry-After."),
};
const hours = TUS_LIFETIME_MS / 3_600_000;
const state = {
  "Upload-Offset": header("Bytes received and stored.", "integer"),
  "Upload-Length": header("The file's size, once known.", "integer"),
  "Upload-Expires": header(`When an unfinished upload is removed (${hours} hours after creation).`),
  "Tus-Resumable": header(TUS_VERSION),
  "X-Upload-Id": header("Once the last byte is in: the id of the upload made (GET /api/{id})."),
  "X-Upload-Src": header("Once the last byte is in: the upload's `src`."),
};
/** Only on the answer to the request whose bytes finished the upload. */
const finishing = {
  ...state,
  "X-Upload-Delete-Url": header(
    "The upload's `delete_url` (keep it private), as POST / answers it: only on the answer that finished the " +
      "upload, and not for a duplicate.",
  ),
  "X-Upload-Duplicate": header("`true` when the file was already an upload of the account's (`duplicate`)."),
};

export const describeTusCreate = describeRoute({
  summary: "Create a tus upload (tus 1.0 creation, creation-with-upload, creation-defer-length)",
  operationId: "tusCreate",
  description:
    `tus ${TUS_VERSION} with the extensions ${TUS_EXTENSIONS.join(", ")} (not concatenation: R2 cannot join ` +
    "stored uploads). Either key kind; creating counts as one upload against the API's limits. " +
    `Upload-Metadata may carry the upload's options (${inReadingOrder(Object.keys(OPTION_FIELDS)).join(", ")}; ` +
    "`filename` or `name`), checked here as POST / checks them. " +
    "A body of type application/offset+octet-stream is written at offset 0. " +
    `Files up to ${megabytes(MAX_FILE_BYTES)}; ` +
    "a request body up to 100 MB (Cloudflare's edge refuses larger ones: clients set a chunkSize). The password is " +
    "kept as its hash only, and left out of the Upload-Metadata HEAD answers.",
  parameters: [
    { name: "Tus-Resumable", in: "header", ...tusResumable },
    { name: "Upload-Length", in: "header", schema: { type: "integer", minimum: 1, maximum: MAX_FILE_BYTES } },
    { name: "Upload-Defer-Length", in: "header", schema: { type: "string", enum: ["1"] } },
    { name: "Upload-Metadata", in: "header", schema: { type: "string" } },
  ],
  responses: {
    201: {
      description: "Created; Location is the upload's URL.",
      headers: { Location: header("The upload's URL."), ...finishing },
    },
    400: error("Neither or both of Upload-Length and Upload-Defer-Length, or bad Upload-Metadata."),
    403: error("The account or the client's address is banned from uploading."),
    413: error(
      `Upload-Length over ${megabytes(MAX_FILE_BYTES)} (Tus-Max-Size) or the account's quota, no upload left in the ` +
        "quota, or a body over 100 MB.",
    ),
    422: error("An option in Upload-Metadata is invalid, or the file is empty."),
    ...common,
  },
});

export const describeTusResult = describeRoute({
  summary: "A tus upload's result (GET) or offset (HEAD)",
  operationId: "tusResult",
  description:
    "HEAD (tus core): Upload-Offset, Upload-Length or Upload-Defer-Length, Upload-Metadata, Upload-Expires; " +
    "`Cache-Control: no-store`. GET (extension): 200 with the upload made from the file, as GET /{id} " +
    "answers it, once its last byte is in; 202 with `{type, offset, length, expires_at}` before. An open " +
    "upload whose stored options no longer parse is refused for good (410).",
  parameters: [{ name: "Tus-Resumable", in: "header", ...tusResumable }],
  responses: {
    200: { ...json(uploadItemResponseSchema, "Finished: the upload."), headers: state },
    202: { description: "Not finished yet.", headers: state },
    ...common,
  },
});

export const describeTusWrite = describeRoute({
  summary: "Send a tus upload's bytes from its offset (tus 1.0 core, checksum)",
  operationId: "tusWrite",
  description:
    "Any size of request works; the service keeps what arrives even when the connection breaks. The last " +
    "byte runs the file through the upload pipeline, and the answer carries X-Upload-Id and X-Upload-Src, " +
    "and, as POST / answers them, the delete link (X-Upload-Delete-Url) and X-Upload-Duplicate. " +
    "A refusal of the file (422, 413) is given again to every later request; a passing failure (503) " +
    "gives the last piece back, so that the client sends it again. One request writes an upload at a " +
    "time (423 to another; a request that lost its lease meanwhile changes nothing). Admitted as POST / is: " +
    "ban (403), quota, the file's size and the daily piece bytes, before any byte is stored; a checksummed " +
    "request is charged its Content-Length first. An upload whose options, kept at creation, no longer " +
    "parse when read back is refused for good with 410 (here, on HEAD and on GET), not a status tus " +
    "clients retry. X-HTTP-Method-Override on POST is honoured.",
  parameters: [
    { name: "Tus-Resumable", in: "header", ...tusResumable },
    { name: "Upload-Offset", in: "header", required: true, schema: { type: "integer", minimum: 0 } },
    {
      name: "Upload-Checksum",
      in: "header",
      schema: { type: "string", description: "`sha1 <base64>` or `sha256 <base64>`." },
    },
    { name: "Upload-Length", in: "header", schema: { type: "integer", minimum: 1 } },
  ],
  requestBody: {
    required: true,
    content: { "application/offset+octet-stream": { schema: { type: "string", format: "binary" } } },
  },
  responses: {
    204: { description: "Stored.", headers: finishing },
    400: error("Bad header, or a checksummed request without Content-Length."),
    403: error("The account or the client's address is banned from uploading."),
    409: error("Upload-Offset is not the upload's offset (the header says which it is)."),
    413: error(
      "The bytes go past Upload-Length, the largest file or (length deferred) the account's quota, or the body " +
        "is over 100 MB.",
    ),
    415: error("Content-Type is not application/offset+octet-stream."),
    422: error("The file was refused by the upload pipeline."),
    423: error("Another request is writing this upload."),
    460: error("Checksum mismatch: nothing of the request was kept."),
    503: error("Storage failed or was busy; nothing past the offset was kept. Retry after Retry-After."),
    ...common,
  },
});

export const describeTusTerminate = describeRoute({
  summary: "Terminate a tus upload (tus 1.0 termination)",
  operationId: "tusTerminate",
  description: "Its bytes are removed and its URL answers 404 from then on. A finished upload's is left as it is.",
  parameters: [{ name: "Tus-Resumable", in: "header", ...tusResumable }],
  responses: { 204: { description: "Terminated." }, 423: error("Another request is writing this upload."), ...common },
});

export const describeTusOverride = describeRoute({
  summary: "PATCH, DELETE or HEAD of a tus upload, sent as POST (X-HTTP-Method-Override)",
  operationId: "tusOverride",
  description:
    "For clients that can only send POST: X-HTTP-Method-Override names the method meant; it is answered as that.",
  parameters: [
    { name: "Tus-Resumable", in: "header", ...tusResumable },
    {
      name: "X-HTTP-Method-Override",
      in: "header",
      required: true,
      schema: { type: "string", enum: ["PATCH", "DELETE", "HEAD"] },
    },
  ],
  responses: {
    204: { description: "As PATCH or DELETE answer.", headers: finishing },
    200: { description: "As HEAD answers.", headers: state },
    405: error("No X-HTTP-Method-Override, or another method."),
    ...common,
  },
});
