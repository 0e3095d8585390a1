import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, wrangler } from "../../scripts/lib/server.mjs";

/**
 * jSquash's glue sets a `self.location` stand-in as it loads, and the MCP SDK's validator builds a
 * URL from `location` as it loads (src/media/image/location-stand-in.ts). The Worker must start
 * whichever of them loads first, not because of the order of one file's imports.
 */
const STAND_IN = "location-stand-in";
const READERS = /^import (?!type )[^;]*"(@jsquash\/|@modelcontextprotocol\/server)/m;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => path.join(e.parentPath, e.name));
}

describe("start-up order", () => {
  it("every module that loads jSquash's glue or the MCP SDK imports the location stand-in first", () => {
    const readers = sourceFiles(path.join(ROOT, "src")).filter((file) => READERS.test(readFileSync(file, "utf8")));
    expect(readers.map((file) => path.relative(ROOT, file)).sort()).toEqual([
      "src/mcp/server.ts",
      "src/media/image/codecs.ts",
    ]);
    for (const file of readers) {
      const firstImport = /^import [^;]*;/m.exec(readFileSync(file, "utf8"))?.[0];
      expect(firstImport, file).toContain(STAND_IN);
    }
  });

  it("starts in workerd with the glue loaded before MCP and MCP before the app", () => {
    // `wrangler check startup` bundles the entry as a deploy would and runs its global scope in
    // workerd; a module that throws as it loads fails it.
    const scratch = mkdtempSync(path.join(os.tmpdir(), "startup-order-"));
    try {
      const out = wrangler([
        "check",
        "startup",
        "--args=test/node/startup/glue-first.ts --containers-rollout=none",
        "--outfile",
        path.join(scratch, "startup.cpuprofile"),
      ]);
      expect(out).toMatch(/Active: [\d.]+ ms/);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
