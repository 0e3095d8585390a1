import { notFound } from "../errors";
import { assertAcceptableText } from "../moderation/moderate";
import { updateUploadMeta, type UploadMetaPatch } from "../storage/uploads";
import type { UploadDeps } from "./deps";

export async function changeUpload(deps: UploadDeps, accountId: string, id: string, patch: UploadMetaPatch) {
  await assertAcceptableText(deps.db, { title: patch.title, description: patch.description });
  const row = await updateUploadMeta(deps.db, accountId, id, patch, deps.now());
  if (!row) throw notFound("No upload with that id on this account.");
  return row;
}
