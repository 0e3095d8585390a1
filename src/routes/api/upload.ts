import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { unprocessable } from "../../errors";
import { afterResponse } from "../../http/after-response";
import { assertMayUpload } from "../../http/auth";
import { linkSigning, publicOrigin } from "../../http/request-info";
import { parseOrThrow } from "../../http/validation";
import { createUpload, newUploadId, type UploadOptions } from "../../uploads/create";
import type { UploadDeps } from "../../uploads/upload-deps";
import { receiveFile, type FileRequest } from "../../uploads/intake/receive-file";
import { presentUpload, presentUploadResult } from "../../uploads/present";
import { assertReplaceable, replaceFile } from "../../uploads/replace";
import { hashPassword } from "../../uploads/access/passwords";
import { getOwnedUpload } from "../../uploads/read";
import { linkDeps } from "../../bindings";
import { workflowRunner } from "../../uploads/media-jobs/runner";
import { settingsOf } from "../../settings";
import { uploadFields } from "./schemas";
import { uploadItemResponse, uploadResponse } from "./responses";

function uploadOptions(fields: Record<string, string>) {
  // An empty optional field means "not given", except title and description, where it means "none".
  const given = Object.fromEntries(
    Object.entries(fields).filter(([k, v]) => v.trim() !== "" || k === "title" || k === "description"),
  );
  return parseOrThrow(uploadFields, given);
}

/** The request's file, for the upload `uploadId`, with its fields read as upload options. */
const fileRequest = (c: Context<AppEnv>, uploadId: string, newUpload: boolean): FileRequest<ReturnType<typeof uploadOptions>> => ({
  request: c.req.raw,
  uploadId,
  newUpload,
  accountId: c.var.caller.accountId,
  link: linkDeps(c.env),
  options: uploadOptions,
});

/**
 * The job's runner starts once its row is committed, right after the response: starting it takes
 * a moment, the work is the runner's (a Workflow instance), and the cron job starts another if
 * this start is lost.
 */
const startMediaJob = (c: Context<AppEnv>, jobId: string | null) => {
  if (jobId) afterResponse(c, "media job", workflowRunner(c.env.MEDIA_JOBS).start(jobId));
};

export async function handleUpload(c: Context<AppEnv>, deps: UploadDeps) {
  assertMayUpload(c);
  const result = await receiveFile(deps, fileRequest(c, newUploadId(), true), async (file, options, id) => {
    const maxExpiry = settingsOf(c.env).expiresInMax;
    if (options.expires_in !== undefined && options.expires_in > maxExpiry) throw unprocessable(`expires_in: must be at most ${maxExpiry}`);
    const settings: UploadOptions = {
      expiresIn: options.expires_in ?? null,
      allowDuplicate: options.allow_duplicate ?? false,
      keepOriginal: options.keep_original ?? false,
      visibility: options.visibility ?? "unlisted",
      title: options.title ?? null,
      description: options.description ?? null,
      passwordHash: options.password ? await hashPassword(options.password) : null,
      maxViews: options.max_views ?? null,
    };
    const created = await createUpload(deps, { id, accountId: c.var.caller.accountId, file, options: settings });
    return { value: created, keptFile: !created.duplicate };
  });
  if (!result.duplicate) startMediaJob(c, result.jobId);
  // A duplicate is an existing upload, which the upload-only key (public by design) may not open:
  // its links come unsigned, so a locked one's path and thumb stay refused.
  const signing = result.duplicate && c.var.caller.kind !== "full" ? null : linkSigning(c);
  return uploadResponse(c, await presentUploadResult(result.row, publicOrigin(c), signing, result));
}

/**
 * POST /api/{id}/replace: a new file for an existing upload, from `uploads` or `upload_id` (or
 * `url`), with optional keep_original. Answers with the updated upload (as GET does).
 */
export async function handleReplace(c: Context<AppEnv>, deps: UploadDeps) {
  assertMayUpload(c);
  const id = c.req.param("id")!;
  // A 404 or 409 before reading what may be a 100 MB body.
  assertReplaceable(await getOwnedUpload(deps, c.var.caller.accountId, id));
  const result = await receiveFile(deps, fileRequest(c, id, false), async (file, options) => ({
    value: await replaceFile(deps, { accountId: c.var.caller.accountId, id, file, keepOriginal: options.keep_original ?? false }),
    keptFile: true,
  }));
  startMediaJob(c, result.jobId);
  return uploadItemResponse(c, await presentUpload(result.row, publicOrigin(c), linkSigning(c)));
}
