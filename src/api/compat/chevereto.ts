import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { z } from "zod";
import { requestStores, uploadCall } from "../../deps";
import type { AppEnv } from "../../env";
import { ApiError, unauthorized, unprocessable } from "../../errors";
import { identifyCallerBy, presentedKey, requireKey } from "../../http/auth";
import { accountSession } from "../../http/d1-sessions";
import { routeGroup } from "../../http/route-group";
import { rateLimits } from "../../http/throttles/rate-limits";
import {
  EXPIRES_IN_MAX,
  EXPIRES_IN_MIN,
  MAX_REQUEST_BYTES,
  MAX_TEXT_BODY_BYTES,
  megabytes,
} from "../../model/spec-limits";
import { isoTimestamp } from "../../time";
import { albumOf } from "./source";
import type { OptionKey } from "../../uploads/schemas/option-fields";
import { parseUploadFields } from "../../uploads/schemas/requests";
import { type ReadUploadRequest, type UploadResult, uploadFrom } from "../../uploads/pipeline";
import { errorsAlsoAs, originalName, reasonPhrase, storedFile } from "./answers";
import { StreamedForm } from "./form";
import { describeCheveretoLink, describeCheveretoUpload } from "./openapi";
import type { cheveretoUploadSchema } from "./schemas";
import { bytesOf, type CompatSource, partSource, textSource } from "./source";

/**
 * Chevereto API v1 (`/api/1/upload`, with or without a trailing slash): tools made for Chevereto
 * upload here, through the same pipeline, key kinds, limits and rate limits as POST /api. What each
 * field becomes is in docs/api.md, "Chevereto and Lsky Pro".
 */

const PATH = "/1/upload";
const SOURCE = "source";
const TOO_LARGE =
  `Request over ${megabytes(MAX_REQUEST_BYTES)}. Give a link as \`source\` instead (up to 200MB), ` +
  "or send the file in pieces through the API (/api/chunk).";

/** A form whose `key` field was found ahead of its file (keyInForm), before its caller was known. */
const openedForms = new WeakMap<Request, StreamedForm>();

/**
 * Chevereto's `key` may be a form field. A key must be known before any byte of a file is
 * staged, and before an unknown caller may cost more than a small read: without X-API-Key or
 * ?key=, the first 64 text fields ahead of the first file part and within the body's first
 * 64 KiB are read (held in memory, nothing stored), and a `key` among them is the key. One after
 * the `source` part, after any other file part, after 64 fields or past 64 KiB is not looked for,
 * and the request is refused (401) as keyless, counted against its network's budget of bad keys
 * as the API's are; so is a body that is no form. The rest of a refused body is never read.
 */
const keyInForm = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.method === "POST" && !presentedKey(c)) {
    try {
      const form = StreamedForm.open(c.req.raw, SOURCE, TOO_LARGE);
      if (await form.findField("key", MAX_TEXT_BODY_BYTES)) openedForms.set(c.req.raw, form);
    } catch (error) {
      // No form, no key: identifyCaller refuses it.
      if (!(error instanceof ApiError)) throw error;
    }
  }
  await next();
});

const keyOf = (c: Context<AppEnv>) => presentedKey(c) ?? (openedForms.get(c.req.raw)?.fields.values.key || undefined);

const keyRefused = () =>
  unauthorized(
    "Missing or invalid API key: send it as X-API-Key, as ?key=, or as a `key` field before the `source` part.",
  );

/** HEAD is GET without a body: it would upload. Nothing that only looks at a URL may. */
const noHead = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.method === "HEAD") throw notAllowed(c.req.method);
  await next();
});

const notAllowed = (method: string) =>
  new ApiError(405, `Method ${method} is not allowed here. Allowed: GET, POST.`, { Allow: "GET, POST" });

type Format = "json" | "txt" | "redirect";
const FORMATS: readonly string[] = ["json", "txt", "redirect"];

const DURATION = /^P(?!$)(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/i;
const DAY = 86_400;
/** Seconds of each part of an ISO 8601 duration, a month as 30 days and a year as 365. */
const UNITS = [365 * DAY, 30 * DAY, 7 * DAY, DAY, 3600, 60, 1];

/** Chevereto's `expiration` (seconds, or an ISO 8601 duration: PT5M, P3D, P1Y) as the API's expires_in. */
function expiresIn(expiration: string | undefined): string | undefined {
  const text = expiration?.trim();
  if (!text) return undefined;
  const match = DURATION.exec(text);
  const seconds = /^\d+$/.test(text)
    ? Number(text)
    : match
      ? UNITS.reduce((sum, unit, i) => sum + unit * Number(match[i + 1] ?? 0), 0)
      : Number.NaN;
  if (!(seconds >= EXPIRES_IN_MIN && seconds <= EXPIRES_IN_MAX)) {
    throw unprocessable("expiration: seconds, or an ISO 8601 duration, from 1 minute (PT1M) to 1 year (P1Y).");
  }
  return String(seconds);
}

/**
 * Chevereto's fields as the API's: only those its tools send that the API has a field for. They
 * are named by the API's option fields, so that one renamed there fails to compile here; an option
 * Chevereto has no field for is not read (docs/architecture.md, "Option fields").
 */
export function cheveretoFields(fields: Record<string, string | undefined>): Record<string, string> {
  const mapped: Partial<Record<OptionKey, string>> = {
    title: fields.title ?? fields.name,
    description: fields.description,
    expires_in: expiresIn(fields.expiration),
    ...albumOf(fields),
  };
  return Object.fromEntries(
    Object.entries(mapped).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

/** What the reader learns beyond the API's fields: how to answer, and the name the file was sent under. */
interface Asked {
  format: Format;
  sentAs: string | null;
}

/**
 * A Chevereto request, read for the upload pipeline: fields from the query and the form (the
 * form's win, as PHP's $_REQUEST has it), the source from the form's `source` part or else the
 * `source` field. Only the fields listed in docs/api.md are read; the others (nsfw, tags,
 * category_id, width) are ignored. `album_id` names an album (albumOf), checked before the source
 * part is stored when it comes ahead of it.
 */
const readChevereto =
  (c: Context<AppEnv>, asked: Asked): ReadUploadRequest =>
  async (stage, checkAlbum) => {
    let source: CompatSource | null = null;
    let formFields: Record<string, string> = {};
    if (c.req.method === "POST") {
      const form = openedForms.get(c.req.raw) ?? StreamedForm.open(c.req.raw, SOURCE, TOO_LARGE);
      const part = await form.head();
      if (part) {
        await checkAlbum(albumOf({ ...c.req.query(), ...form.fields.values }));
        source = await partSource(part, stage);
        asked.sentAs = part.filename;
      }
      await form.rest();
      formFields = form.fields.values;
    }
    const fields: Record<string, string | undefined> = { ...c.req.query(), ...formFields };
    const format = fields.format?.trim().toLowerCase() || "json";
    if (!FORMATS.includes(format)) throw unprocessable("format: must be one of json, txt, redirect.");
    asked.format = format as Format;
    if (!source) {
      const text = fields.source?.trim();
      if (!text) throw unprocessable("Empty upload source: send the file, a link or base64 text as `source`.");
      source = await textSource(bytesOf(text), stage, c.req.method === "POST");
    }
    const apiFields = { ...cheveretoFields(fields), ...(source.url === undefined ? {} : { url: source.url }) };
    return { fields: parseUploadFields(apiFields), source: { sent: source.sent, url: source.url } };
  };

type CheveretoUpload = z.infer<typeof cheveretoUploadSchema>;

/** "YYYY-MM-DD hh:mm:ss" in UTC, as Chevereto writes its dates. */
const cheveretoDate = (iso: string) => iso.slice(0, 19).replace("T", " ");

function cheveretoBody(upload: UploadResult, sentAs: string | null, now: number): CheveretoUpload {
  const file = storedFile(upload);
  const date = cheveretoDate(isoTimestamp(now));
  return {
    status_code: 200,
    success: { message: "image uploaded", code: 200 },
    image: {
      id_encoded: upload.id,
      name: file.name,
      extension: file.extension,
      filename: file.filename,
      original_filename: originalName(upload, sentAs),
      mime: file.mime,
      size: upload.size,
      width: upload.width,
      height: upload.height,
      date,
      date_gmt: date,
      expiration_date_gmt: upload.expires_at === null ? null : cheveretoDate(upload.expires_at),
      title: upload.title,
      description: upload.description,
      url: upload.src,
      url_viewer: upload.direct,
      display_url: upload.src,
      image: {
        filename: file.filename,
        name: file.name,
        mime: file.mime,
        extension: file.extension,
        url: upload.src,
        size: upload.size,
      },
      thumb: { url: upload.thumb ?? upload.src },
      medium: { url: upload.src },
      ...(upload.delete_url ? { delete_url: upload.delete_url } : {}),
    },
    status_txt: "OK",
  };
}

async function handleChevereto(c: Context<AppEnv>) {
  const asked: Asked = { format: "json", sentAs: null };
  const { data: upload } = await uploadFrom(requestStores(c), uploadCall(c), readChevereto(c, asked));
  if (asked.format === "txt") return c.text(upload.src);
  if (asked.format === "redirect") return c.redirect(upload.direct, 303);
  return c.json(cheveretoBody(upload, asked.sentAs, c.var.now()));
}

/** Chevereto's error fields, beside the envelope (errorsAlsoAs); `code` is the HTTP status. */
const cheveretoError = (status: number, message: string) => ({
  status_code: status,
  error: { message, code: status },
  status_txt: reasonPhrase(status),
});

export const chevereto = routeGroup(
  errorsAlsoAs(cheveretoError),
  noHead,
  keyInForm,
  identifyCallerBy(keyOf, keyRefused),
  rateLimits("api"),
  accountSession,
)
  .post(PATH, describeCheveretoUpload, requireKey("any"), handleChevereto)
  .get(PATH, describeCheveretoLink, requireKey("any"), handleChevereto)
  .all(PATH, (c) => {
    throw notAllowed(c.req.method);
  });
