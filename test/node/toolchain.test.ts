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
