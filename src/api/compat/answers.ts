import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../../env";
import type { errorBody } from "../../errors";
import { mimeOfExtension } from "../../media/sniff";
import type { UploadResult } from "../../uploads/pipeline";

/**
 * An error answer of a compatible endpoint: the app's one error handler has answered with the
 * service's envelope, its status and headers (Retry-After, Allow, the rate-limit headers); this
 * adds the fields the tool parses, so that one body reads right to both. Placed first in the
 * endpoint's group, it is the one place that endpoint's errors are mapped.
 */
export const errorsAlsoAs = (fields: (status: number, message: string) => Record<string, unknown>) =>
  createMiddleware<AppEnv>(async (c, next) => {
    await next();
    if (!c.error) return;
    const { status } = c.res;
    const envelope = (await c.res.json()) as ReturnType<typeof errorBody>;
    c.res = new Response(JSON.stringify({ ...fields(status, envelope.errors), ...envelope }), {
      status,
      headers: { "Content-Type": "application/json" },
    });
  });

const REASONS: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  413: "Payload Too Large",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/** The reason phrase of an HTTP status, as PHP's status line (and so Chevereto's status_txt) has it. */
export const reasonPhrase = (status: number) => REASONS[status] ?? "Error";

/** The stored file as `path` names it: its name, the name without extension, the extension, the MIME type. */
export function storedFile(upload: UploadResult) {
  const pathname = new URL(upload.path).pathname;
  const filename = decodeURIComponent(pathname.slice(pathname.lastIndexOf("/") + 1));
  const dot = filename.lastIndexOf(".");
  const extension = dot < 0 ? "" : filename.slice(dot + 1);
  return {
    /** The path of the file under the service's origin, without its leading slash. */
    pathname: pathname.slice(1),
    filename,
    name: dot < 0 ? filename : filename.slice(0, dot),
    extension,
    mime: mimeOfExtension(extension) ?? "application/octet-stream",
  };
}

/** The name the client sent the file under, or else the upload's id and the stored extension. */
export const originalName = (upload: UploadResult, sentAs: string | null) =>
  sentAs?.trim() || `${upload.id}.${storedFile(upload).extension}`;

/** A link's text for HTML attributes and Markdown alt text, escaped for both. */
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
export const escapeMarkdown = (text: string) => text.replace(/[\\[\]]/g, (ch) => `\\${ch}`);
