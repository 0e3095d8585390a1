import type { UploadRow } from "../storage/schema";
import { isoTimestamp } from "../time";
import { deleteLink, uploadLinks } from "./links";

/** The Upload resource of the spec, as list items, GET and PATCH return it. */
export function presentUpload(row: UploadRow, origin: string) {
  return {
    id: row.id,
    type: row.type,
    ...uploadLinks(origin, row),
    width: row.width,
    height: row.height,
    size: row.size,
    locked: false,
    visibility: row.visibility,
    title: row.title,
    description: row.description,
    expires_at: row.expiresAt === null ? null : isoTimestamp(row.expiresAt),
    created_at: isoTimestamp(row.createdAt),
  };
}

/** The Upload resource as the upload response returns it. */
export function presentUploadResult(
  row: UploadRow,
  origin: string,
  result: { duplicate: boolean; deleteToken?: string },
) {
  const { created_at: _, ...upload } = presentUpload(row, origin);
  return {
    ...upload,
    duplicate: result.duplicate,
    ...(result.deleteToken ? { delete_url: deleteLink(origin, row.id, result.deleteToken) } : {}),
  };
}
