import { randomBase62 } from "../crypto";

/**
 * R2 layout. Every object of an upload lives under `uploads/{id}/`, so deleting or sweeping an
 * upload is a prefix operation. A new version gets a new random name, which makes stored
 * objects immutable (and cacheable forever) and lets a replacement never mix with the old file.
 */
export const uploadPrefix = (uploadId: string) => `uploads/${uploadId}/`;

export const newObjectKey = (uploadId: string, ext: string) => `${uploadPrefix(uploadId)}${randomBase62(8)}.${ext}`;

/** The file name part of a key, as used in the upload's `path` URL. */
export const objectName = (key: string) => key.slice(key.lastIndexOf("/") + 1);

/** Pieces of a file sent to /api/chunk, under the client's upload_id until the file is assembled. */
export const PIECES_PREFIX = "chunks/";
export const piecePrefix = (uploadId: string) => `${PIECES_PREFIX}${uploadId}/`;
export const pieceKey = (uploadId: string, index: number) => `${piecePrefix(uploadId)}${index}`;
