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

/**
 * Variants of a stored file (src/uploads/variants) live beside it, under a folder named after it:
 * `uploads/{id}/v/{name}/{width}.{ext}`. They are made from that one file, so they go when it
 * goes, and a new file starts with none.
 */
export const variantPrefix = (objectKey: string) =>
  `${objectKey.slice(0, objectKey.lastIndexOf("/") + 1)}v/${objectName(objectKey)}/`;

export const variantKey = (objectKey: string, width: number, ext: string) =>
  `${variantPrefix(objectKey)}${width}.${ext}`;

/**
 * A video's poster at `ms` milliseconds, `width` px wide: a variant of its frame at that time
 * (`uploads/{id}/v/{name}/poster-{ms}-{width}.{ext}`), made and kept as variants are.
 */
export const posterKey = (objectKey: string, ms: number, width: number, ext: string) =>
  `${variantPrefix(objectKey)}poster-${ms}-${width}.${ext}`;

/**
 * An image transform (`src?w=&h=&fit=...`): a variant named by its resolved options
 * (`uploads/{id}/v/{name}/x-{options}.{ext}`, the options as `transformName` writes them, sizes in
 * output pixels and a stored focal point written as the point it is), so every request that
 * resolves to the same pixels shares one copy, and the copies made at an old focal point are
 * found by their names.
 */
export const transformKey = (objectKey: string, options: string, ext: string) =>
  `${variantPrefix(objectKey)}x-${options}.${ext}`;

/** Where a file's transforms are listed from (transformKey). */
export const transformPrefix = (objectKey: string) => `${variantPrefix(objectKey)}x-`;

/**
 * A video's HLS ladder (model/ladder.ts) lives with its variants, made from the same one file:
 * `uploads/{id}/v/{name}/hls-{ladder id}-{file}`. It goes when the file goes, and a new file starts with
 * none; the ladder's id (model/ladder.ts) keeps each attempt at making it to keys of its own.
 */
export const ladderKey = (objectKey: string, ladderId: string, fileName: string) =>
  `${variantPrefix(objectKey)}hls-${ladderId}-${fileName}`;

/** Every key of the ladder a row names (none without one). */
export const ladderKeysOf = (row: { objectKey: string; ladder: { id: string; files: { name: string }[] } | null }) =>
  row.ladder ? row.ladder.files.map((file) => ladderKey(row.objectKey, row.ladder!.id, file.name)) : [];

/** Whether the key is a ladder file's (ladderKey), rather than another variant's. */
export const isLadderKey = (key: string) => /^uploads\/[^/]+\/v\/[^/]+\/hls-[^/]+$/.test(key);

/** The stored file a variant's key was made from, or null when the key is not a variant's. */
export function variantSource(key: string): string | null {
  const match = /^(uploads\/[^/]+\/)v\/([^/]+)\/[^/]+$/.exec(key);
  return match ? `${match[1]}${match[2]}` : null;
}

/** Pieces of a file sent to /api/chunk, under the client's upload_id until the file is assembled. */
export const PIECES_PREFIX = "chunks/";
export const piecePrefix = (uploadId: string) => `${PIECES_PREFIX}${uploadId}/`;
export const pieceKey = (uploadId: string, index: number) => `${piecePrefix(uploadId)}${index}`;
/**
 * A tus upload's bytes that wait for their piece to fill (uploads/intake/tus/byte-writer.ts), by
 * where they start and the request that wrote them (its writer lease): every request writes keys of
 * its own, so a writer that lost its lease never overwrites another's bytes, and no key is
 * written twice (R2 takes one write a second to a key).
 */
export const tusTailPrefix = (uploadId: string) => `${piecePrefix(uploadId)}tail/`;
export const tusTailKey = (uploadId: string, start: number, writer: string) =>
  `${tusTailPrefix(uploadId)}${start}.${writer}`;
/** A tus request's bytes held until their checksum is known, under the request's own key. */
export const tusCheckedKey = (uploadId: string, writer: string) => `${piecePrefix(uploadId)}checked/${writer}`;
