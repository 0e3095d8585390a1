import { objectName } from "../storage/keys";
import type { UploadRow } from "../model/schema";

/**
 * Public URL layout:
 *   /i/{id}              src: always the upload's current file
 *   /i/{id}?w={width}    a variant of it: resized, and encoded as the client accepts
 *   /f/{id}/{name}       path: one stored object (its name changes when the file is converted)
 *   /t/{id}/{name}       thumb
 *   /v/{id}              direct: the upload's page
 *   /d/{id}/{token}      delete_url
 *   /h/{id}/master.m3u8  hls: the current ladder's master playlist (stable across replacements)
 *   /h/{id}/{ladder}/{file}  every other file of the ladder, {ladder} the file's object name, so
 *                        immutable (a new file or a move gives new ones); storyboard is its VTT
 */
export function uploadLinks(origin: string, row: Pick<UploadRow, "id" | "objectKey" | "thumbKey">) {
  return {
    src: `${origin}/i/${row.id}`,
    path: `${origin}/f/${row.id}/${objectName(row.objectKey)}`,
    direct: `${origin}/v/${row.id}`,
    thumb: row.thumbKey ? `${origin}/t/${row.id}/${objectName(row.thumbKey)}` : null,
  };
}

export const deleteLink = (origin: string, id: string, token: string) => `${origin}/d/${id}/${token}`;

/** A variant of the upload's image (src/uploads/variants): `src` at a ladder width, in `format`. */
export const variantUrl = (src: string, width: number, format?: "original") =>
  `${src}?w=${width}${format ? `&format=${format}` : ""}`;
