import { notFound } from "../errors";
import { assertAcceptableText } from "../moderation/moderate";
import { hashPassword } from "./access/passwords";
import { updateUploadMeta, type UploadMetaPatch } from "../storage/uploads";
import type { UploadDeps } from "./upload-deps";

export interface UploadChange extends Pick<UploadMetaPatch, "visibility" | "title" | "description"> {
  /** A new password, or null to remove it. */
  password?: string | null;
  /** A new view limit (the count starts afresh), or null to remove it. */
  max_views?: number | null;
}

export async function changeUpload(deps: UploadDeps, accountId: string, id: string, change: UploadChange) {
  const { password, max_views, ...text } = change;
  await assertAcceptableText(deps.db, { title: text.title, description: text.description });
  const patch: UploadMetaPatch = { ...text };
  if (password !== undefined) patch.passwordHash = password === null ? null : await hashPassword(password);
  if (max_views !== undefined) Object.assign(patch, { maxViews: max_views, views: 0 });
  const row = await updateUploadMeta(deps.db, accountId, id, patch, deps.now());
  if (!row) throw notFound("No upload with that id on this account.");
  return row;
}
