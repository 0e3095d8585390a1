import { notFound } from "../errors";
import { updateUploadMeta, type UploadMetaPatch } from "../storage/uploads";
import type { UploadDeps } from "./deps";

export async function changeUpload(deps: UploadDeps, accountId: string, id: string, patch: UploadMetaPatch) {
  const row = await updateUploadMeta(deps.db, accountId, id, patch, deps.now());
  if (!row) throw notFound("No upload with that id on this account.");
  return row;
}
