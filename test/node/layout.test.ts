import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");

/** Every folder under src/, and every file at its top: what the layout must name. */
function sourceTree(): string[] {
  const names: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const name = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        names.push(`${name}/`);
        walk(name);
      } else if (dir === "src") {
        names.push(name);
      }
    }
  };
  walk("src");
  return names.sort();
}

/** The first word of each line of the layout block that names a path under src/. */
function documentedLayout(): string[] {
  const text = readFileSync(path.join(ROOT, "docs/architecture.md"), "utf8");
  const block = /## Layout[\s\S]*?```\n([\s\S]*?)```/.exec(text)![1]!;
  return block
    .split("\n")
    .map((line) => line.split(/\s+/)[0]!)
    .filter((name) => name.startsWith("src/"))
    .sort();
}

describe("docs/architecture.md layout", () => {
  it("names every folder under src/ and every file at its top, and nothing else", () => {
    expect(documentedLayout()).toEqual(sourceTree());
  });
});

/** Every TypeScript file under `dir`, and the browser's JavaScript and CSS, relative to the root. */
function typescriptFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const name = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return typescriptFiles(name);
    return /\.(ts|js|css)$/.test(name) ? [name] : [];
  });
}

describe("source lines", () => {
  // The formatter keeps code within 120 columns but leaves comments and strings as written.
  it("are at most 120 characters in src/ and container/src/", () => {
    const long = ["src", "container/src"].flatMap((dir) =>
      typescriptFiles(dir).flatMap((file) =>
        readFileSync(path.join(ROOT, file), "utf8")
          .split("\n")
          .flatMap((line, index) => (line.length > 120 ? [`${file}:${index + 1} (${line.length})`] : [])),
      ),
    );
    expect(long).toEqual([]);
  });
});
