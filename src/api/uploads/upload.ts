import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { linkSigning, publicOrigin } from "../../http/request-info";
import { readUploadBody } from "../../http/upload-body";
import { presentUpload } from "../../uploads/present";
import { parseUploadFields } from "../../uploads/schemas/requests";
import { type ReadUploadRequest, replaceFrom, uploadFrom } from "../../uploads/pipeline";
import { type Stores, uploadCall } from "../../deps";
import { envelope } from "../envelope";
import { uploadItemResponseSchema } from "../schemas";
import { uploadResponseSchema } from "./schemas";

/**
 * The API's own request: its file, if sent, is staged as it streams in, and its fields are
 * checked, which also say where the file comes from otherwise.
 */
const readApiRequest =
  (c: Context<AppEnv>): ReadUploadRequest =>
  async (stage, checkAlbum) => {
    const body = await readUploadBody(c.req.raw, stage, checkAlbum);
    const fields = parseUploadFields(body.fields);
    return { fields, source: { sent: body.file, url: fields.url, pieceSessionId: fields.upload_id } };
  };

/** POST /api. */
export async function handleUpload(c: Context<AppEnv>, deps: Stores) {
  const { data } = await uploadFrom(deps, uploadCall(c), readApiRequest(c));
  return envelope(c, uploadResponseSchema, { msg: "success", data });
}

/**
 * POST /api/{id}/replace: a new file for an existing upload, from `uploads` or `upload_id` (or
 * `url`), with optional keep_original. Answers with the updated upload (as GET does).
 */
export async function handleReplace(c: Context<AppEnv>, deps: Stores) {
  const row = await replaceFrom(deps, uploadCall(c), c.req.param("id")!, readApiRequest(c));
  const data = await presentUpload(row, publicOrigin(c), linkSigning(c));
  return envelope(c, uploadItemResponseSchema, { msg: "success", data });
}
