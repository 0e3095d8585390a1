import { rmSync, writeFileSync, readFileSync, mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkDeploy, MAX_GZIP_KIB, MAX_STARTUP_MS } from "../../scripts/lib/deploy-check.mjs";
import { ROOT } from "../../scripts/lib/server.mjs";

/**
 * What Cloudflare would say of a deploy, asked without an account or Docker (docs/operations.md,
 * "Before a deploy"): the dry-run bundle against the size limit, the startup time against its
 * limit, and every binding resolved.
 */
const scratch = mkdtempSync(path.join(os.tmpdir(), "deploy-check-test-"));
const BROKEN_CONFIG = `wrangler.deploy-check.${process.pid}.toml`;

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
  rmSync(path.join(ROOT, BROKEN_CONFIG), { force: true });
});

/** The bindings wrangler.toml declares, by name. */
const declaredBindings = () =>
  [...readFileSync(path.join(ROOT, "wrangler.toml"), "utf8").matchAll(/^\s*(?:binding|name) = "([A-Z0-9_]+)"/gm)].map(
    (m) => m[1],
  );

describe("the deploy check", () => {
  it("finds the Worker within the platform's size and startup limits, with every binding resolved", () => {
    const figures = checkDeploy();
    console.log(
      `deploy check: ${figures.kib} KiB, ${figures.gzipKib} KiB compressed (limit ${MAX_GZIP_KIB}), ` +
        `startup ${figures.startupMs} ms (limit ${MAX_STARTUP_MS})`,
    );
    expect(figures.gzipKib).toBeLessThan(MAX_GZIP_KIB);
    expect(figures.startupMs).toBeLessThan(MAX_STARTUP_MS);
    expect(figures.bindings).toEqual(expect.arrayContaining(declaredBindings()));
    expect(declaredBindings()).toEqual(
      expect.arrayContaining(["DB", "FILES", "MEDIA_CONTAINER", "RATE_LIMITER", "VARIANT_LOCKS", "MEDIA_JOBS"]),
    );
  });

  it("fails when a binding's class is not exported by the Worker's entry point", () => {
    // The real entry point, less the VariantLocks class its VARIANT_LOCKS binding names.
    const entry = path.join(scratch, "entry-without-variant-locks.ts");
    const real = path.join(ROOT, "src/entry/index.ts");
    writeFileSync(
      entry,
      `export { MediaContainer, MediaJobWorkflow, RateLimiter } from ${JSON.stringify(real)};\n` +
        `export { default } from ${JSON.stringify(real)};\n`,
    );
    const config = readFileSync(path.join(ROOT, "wrangler.toml"), "utf8").replace(
      /^main = .*$/m,
      `main = ${JSON.stringify(entry)}`,
    );
    writeFileSync(path.join(ROOT, BROKEN_CONFIG), config);
    expect(() => checkDeploy({ config: BROKEN_CONFIG })).toThrow(/not exported in your entrypoint file: VariantLocks/);
  });
});
