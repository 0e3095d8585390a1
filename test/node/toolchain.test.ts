import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import rootPackage from "../../package.json";
import containerPackage from "../../container/package.json";

const ROOT = path.resolve(import.meta.dirname, "../..");
const read = (file: string) => readFileSync(path.join(ROOT, file), "utf8");
const major = (version: string) => Number(/(\d+)/.exec(version)![1]);

/** One Node major everywhere: the tests, the npm scripts, the local media service and its image. */
describe("the Node the project runs on", () => {
  const pinned = major(rootPackage.devDependencies.node);

  it("runs the tests on the pinned Node, the one .nvmrc names", () => {
    expect(major(process.version)).toBe(pinned);
    expect(major(read(".nvmrc").trim())).toBe(pinned);
    expect(process.version).toBe(`v${rootPackage.devDependencies.node}`);
  });

  it("builds the media service for it, and its image from it", () => {
    expect(containerPackage.scripts.build).toContain(`--target=node${pinned}`);
    expect(read("scripts/lib/bundle.mjs")).toContain(`target: "node${pinned}"`);
    const bases = [...read("container/Dockerfile").matchAll(/^FROM (\S+)/gm)].map((m) => m[1]!);
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) expect(base).toMatch(new RegExp(`^node:${pinned}-`));
  });
});

/**
 * Miniflare with the project's patch (patches/, applied by `npm install`'s postinstall): its local
 * R2 reads a stored body 64 KiB at a time instead of in the runtime's 4 KiB chunks, and its
 * WebSockets to workerd (the test pool's connection among them) are not compressed.
 * docs/testing.md, "Local R2, 64 KiB at a time", says why.
 */
describe("the miniflare the tests and npm run dev run on", () => {
  it("is miniflare's, with the patch for its installed version applied", () => {
    const installed = JSON.parse(read("node_modules/miniflare/package.json")).version as string;
    expect(read(`patches/miniflare+${installed}.patch`)).toContain("forEachBlock");
    const bucket = read("node_modules/miniflare/dist/src/workers/r2/bucket.worker.js");
    expect(bucket).toContain("async function forEachBlock(stream, onBlock)");
    expect(bucket).not.toContain("value.pipeThrough(digesting)");
  });

  it("opens its WebSockets to the local runtime uncompressed", () => {
    expect(read("node_modules/miniflare/dist/src/index.js")).toMatch(
      /new import_ws2\.default\(url54, protocols2, \{[^}]*perMessageDeflate: false,/,
    );
  });
});
