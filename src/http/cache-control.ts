/** What browsers and shared caches may keep of a response, and for how long. */

/**
 * Kept by no cache at all: anything that must stop being served the moment a signed link
 * expires, a view limit is used up or an upload is deleted, and anything carrying a secret.
 */
export const NO_STORE = "private, no-store";

/** Kept, but revalidated on every use (the ETag makes that cheap), so a new file shows at once. */
export const REVALIDATE = "public, no-cache";

/** Kept by browsers and shared caches for `seconds`, then fetched again. */
export const publicFor = (seconds: number) => `public, max-age=${seconds}`;

const YEAR_SECONDS = 31_536_000;

/** A file whose URL names its version (a package's, served as it is): kept for a year by any cache. */
export const VERSIONED = `public, max-age=${YEAR_SECONDS}, immutable`;

/**
 * A stored object never changes under its name: cacheable for a year, or until the upload
 * expires, by any cache (`public`) or by the browser alone (`private`).
 */
export function immutableUntil(expiresAt: number | null, now: number, caches: "public" | "private"): string {
  const seconds = expiresAt === null ? YEAR_SECONDS : Math.max(0, Math.floor((expiresAt - now) / 1000));
  return `${caches}, max-age=${Math.min(seconds, YEAR_SECONDS)}, immutable`;
}
