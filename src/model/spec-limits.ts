/** Limits from the spec's Limits table. MB in the spec is read as MiB (its piece size is 5242880). */
export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;
/** A size as the spec writes it, in whole MB (MiB): 100MB. */
export const megabytes = (bytes: number) => `${bytes / MiB}MB`;
export const MAX_REQUEST_BYTES = 100 * MiB;
export const MAX_FILE_BYTES = 200 * MiB;
/** The largest piece of a file sent in pieces, which the chunk response names as chunk_size. */
export const PIECE_BYTES = 5 * MiB;
export const TITLE_MAX = 90;
export const DESCRIPTION_MAX = 500;
export const EXPIRES_IN_MIN = 60;
export const EXPIRES_IN_MAX = 31_536_000;
export const PAGE_SIZE = 50;
/** Largest width or height of an image, in pixels. */
export const MAX_IMAGE_SIDE = 30_000;
/** Largest JSON or urlencoded body any route accepts. */
export const MAX_TEXT_BODY_BYTES = 64 * 1024;
/** Width of every thumbnail, image or video (spec: 280 px WebP). */
export const THUMB_WIDTH = 280;
