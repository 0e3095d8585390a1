/** An account's two keys: the full key, and the upload-only key meant for browsers. */
export const KEY_KINDS = ["full", "upload"] as const;
export type KeyKind = (typeof KEY_KINDS)[number];
