import { createHash } from "node:crypto";
import type { Context } from "hono";
import type { z } from "zod";
import { requestStores, uploadCall } from "../../deps";
import type { AppEnv } from "../../env";
import { unauthorized, unprocessable } from "../../errors";
import { bearerOrPresentedKey, identifyCallerBy, requireKey } from "../../http/auth";
import { accountSession } from "../../http/d1-sessions";
import { methodNotAllowed } from "../../http/method-not-allowed";
import { routeGroup } from "../../http/route-group";
import { rateLimits } from "../../http/throttles/rate-limits";
import { MAX_REQUEST_BYTES, megabytes } from "../../model/spec-limits";
import type { Visibility } from "../../model/visibility";
import { albumOf } from "./source";
import type { OptionKey } from "../../uploads/schemas/option-fields";
import { parseUploadFields } from "../../uploads/schemas/requests";
import { type ReadUploadRequest, type UploadResult, uploadFrom } from "../../uploads/pipeline";
import { errorsAlsoAs, escapeHtml, escapeMarkdown, originalName, storedFile } from "./answers";
import { StreamedForm } from "./form";
import { describeLskyUpload } from "./openapi";
import type { lskyUploadSchema } from "./schemas";

/**
 * Lsky Pro v1 (`/api/v1/upload`): tools made for Lsky Pro (PicGo's and PicList's Lsky uploaders)
 * upload here with `Authorization: Bearer <key>`, through the same pipeline, key kinds, limits and
 * rate limits as POST /api. What each field becomes is in docs/api.md, "Chevereto and Lsky Pro".
 */

const PATH = "/v1/upload";
const FILE = "file";
const TOO_LARGE =
  `Request over ${megabytes(MAX_REQUEST_BYTES)}. ` +
  "Send the file in pieces through the API (/api/chunk), or give it a link there (up to 200MB).";

const keyRefused = () => unauthorized("Missing or invalid API key: send it as `Authorization: Bearer <key>`.");

/** Lsky's `permission` (1 public, 0 private) as the API's visibility; without it, the API's default. */
function visibility(permission: string | undefined): Visibility | undefined {
  const value = permission?.trim();
  if (!value) return undefined;
  if (value === "1") return "public";
  if (value === "0") return "private";
  throw unprocessable("permission: must be 1 (public) or 0 (private).");
}

/**
 * Lsky's fields as the API's: `permission` as visibility, `album_id` as album. They are named by
 * the API's option fields, so that one renamed there fails to compile here; an option Lsky has no
 * field for is not read (docs/architecture.md, "Option fields").
 */
export function lskyFields(fields: Record<string, string>): Record<string, string> {
  const permission = visibility(fields.permission);
  const mapped: Partial<Record<OptionKey, string>> = {
    ...(permission ? { visibility: permission } : {}),
    ...albumOf(fields),
  };
  return mapped as Record<string, string>;
}

/** What the reader learns beyond the API's fields: the file's name as sent and its hashes as received. */
interface Received {
  sentAs: string | null;
  md5: string;
  sha1: string;
}

/** The file's bytes as they pass to staging, hashed on the way (Lsky's md5 and sha1 are the received file's). */
async function* hashed(chunks: AsyncIterable<Uint8Array>, received: Received): AsyncGenerator<Uint8Array> {
  const md5 = createHash("md5");
  const sha1 = createHash("sha1");
  for await (const chunk of chunks) {
    md5.update(chunk);
    sha1.update(chunk);
    yield chunk;
  }
  received.md5 = md5.digest("hex");
  received.sha1 = sha1.digest("hex");
}

/**
 * A Lsky request, read for the upload pipeline: a multipart form whose `file` part is the file;
 * `permission` and `album_id` (albumOf) are read, `strategy_id` is accepted and ignored.
 */
const readLsky =
  (c: Context<AppEnv>, received: Received): ReadUploadRequest =>
  async (stage, checkAlbum) => {
    const form = StreamedForm.open(c.req.raw, FILE, TOO_LARGE);
    const part = await form.head();
    if (part) await checkAlbum(albumOf(form.fields.values));
    const sent = part ? await stage(hashed(part.body, received)) : null;
    if (!sent) throw unprocessable("No file: send the image as the multipart/form-data field `file`.");
    received.sentAs = part!.filename;
    await form.rest();
    return { fields: parseUploadFields(lskyFields(form.fields.values)), source: { sent } };
  };

type LskyUpload = z.infer<typeof lskyUploadSchema>;

function lskyBody(upload: UploadResult, received: Received): LskyUpload {
  const file = storedFile(upload);
  const name = originalName(upload, received.sentAs);
  const alt = escapeHtml(name);
  const markdown = `![${escapeMarkdown(name)}](${upload.src})`;
  return {
    status: true,
    message: "上传成功",
    data: {
      key: upload.id,
      name: file.filename,
      pathname: file.pathname,
      origin_name: name,
      size: Math.round((upload.size / 1024) * 100) / 100,
      mimetype: file.mime,
      extension: file.extension,
      md5: received.md5,
      sha1: received.sha1,
      links: {
        url: upload.src,
        html: `<img src="${upload.src}" alt="${alt}" title="${alt}" />`,
        bbcode: `[img]${upload.src}[/img]`,
        markdown,
        markdown_with_link: `[${markdown}](${upload.src})`,
        thumbnail_url: upload.thumb ?? upload.src,
        ...(upload.delete_url ? { delete_url: upload.delete_url } : {}),
      },
    },
  };
}

async function handleLsky(c: Context<AppEnv>) {
  const received: Received = { sentAs: null, md5: "", sha1: "" };
  const { data: upload } = await uploadFrom(requestStores(c), uploadCall(c), readLsky(c, received));
  return c.json(lskyBody(upload, received));
}

/** Lsky's error fields, beside the envelope (errorsAlsoAs). */
const lskyError = (_status: number, message: string) => ({ status: false, message, data: {} });

export const lsky = routeGroup(
  errorsAlsoAs(lskyError),
  identifyCallerBy(bearerOrPresentedKey, keyRefused),
  rateLimits("api"),
  accountSession,
)
  .post(PATH, describeLskyUpload, requireKey("any"), handleLsky)
  .all(PATH, methodNotAllowed("POST"));
