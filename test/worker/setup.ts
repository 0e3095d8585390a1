import { Buffer } from "node:buffer";
import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);

// strayObjects() (helpers.ts) counts only what this file stored: files sharing a workerd run one after another.
(globalThis as { testFileStartedAt?: number }).testFileStartedAt = Date.now();

/**
 * Bytes compared by the runtime rather than element by element: vitest's own equality walks a
 * typed array's entries in JavaScript, seconds of CPU for the megabytes some files compare.
 * Added once per workerd (shared files run this again).
 */
const state = globalThis as { bytesTester?: boolean };
if (!state.bytesTester) {
  state.bytesTester = true;
  expect.addEqualityTesters([
    (a: unknown, b: unknown) =>
      a instanceof Uint8Array && b instanceof Uint8Array && a.constructor === b.constructor
        ? a.length === b.length && Buffer.compare(a, b) === 0
        : undefined,
  ]);
}
