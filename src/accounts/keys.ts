import { randomBase62, sha256Hex } from "../crypto";
import type { KeyKind } from "../model/key-kinds";

/**
 * API keys: a kind prefix and 32 base62 characters (about 190 random bits). The prefix lets a
 * person (or a secret scanner) tell a full key from an upload-only key at a glance; only the
 * SHA-256 of a key is stored.
 */
const KEY_PREFIX: Record<KeyKind, string> = { full: "fk_", upload: "uk_" };

export function generateKey(kind: KeyKind): string {
  return KEY_PREFIX[kind] + randomBase62(32);
}

export const hashKey = (key: string) => sha256Hex(key);
