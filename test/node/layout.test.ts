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

/**
 * The faces: each way the service is reached, side by side on one floor. The API's sub-faces
 * (src/api/compat, and tus) are part of the API's.
 */
const FACES = ["src/site/", "src/mcp/", "src/api/", "src/files/"];

/**
 * The floors of src/, from the top down (docs/architecture.md, "Layout"): a file may import from
 * its own floor's folder or from a lower floor, never from a higher one. The faces stand above
 * the composition root (deps.ts) and the domain; the model, importing only drizzle, stands under
 * storage and the domain alike.
 */
const FLOORS = [
  ["src/entry/"],
  FACES,
  ["src/deps.ts"],
  ["src/http/"],
  ["src/uploads/"],
  ["src/media/"],
  ["src/moderation/"],
  ["src/settings.ts"],
  ["src/limits/"],
  ["src/env.ts"],
  ["src/accounts/"],
  ["src/storage/"],
  ["src/model/"],
  ["src/net/", "src/crypto.ts", "src/bytes.ts", "src/errors.ts", "src/time.ts", "src/wasm.d.ts", "container/src/"],
];

const floorOf = (file: string) => FLOORS.findIndex((floor) => floor.some((place) => file.startsWith(place)));
const placeOf = (file: string) => FLOORS.flat().find((place) => file.startsWith(place));

/** The files of this tree that `file` imports (relative imports, resolved as the bundler does). */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(ROOT, file), "utf8");
  return [...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"'?]+)/g)].flatMap(([, spec]) => {
    const base = path.relative(ROOT, path.resolve(path.dirname(path.join(ROOT, file)), spec!));
    const found = [base, `${base}.ts`, `${base}/index.ts`].find((name) => SOURCE.has(name));
    return found ? [found] : [];
  });
}

const SOURCE = new Set(["src", "container/src"].flatMap(typescriptFiles));

describe("imports", () => {
  it("place every source file on a floor", () => {
    expect([...SOURCE].filter((file) => floorOf(file) < 0)).toEqual([]);
  });

  it("never run up a floor, nor from one folder of a floor into another", () => {
    const upward = [...SOURCE].flatMap((file) =>
      importsOf(file)
        .filter((target) => placeOf(target) !== placeOf(file) && floorOf(target) <= floorOf(file))
        .map((target) => `${file} -> ${target}`),
    );
    expect(upward).toEqual([]);
  });

  it("never run from one face into another: what two faces share stands below them", () => {
    const faceOf = (file: string) => FACES.find((face) => file.startsWith(face));
    const across = [...SOURCE].flatMap((file) =>
      importsOf(file)
        .filter((target) => faceOf(file) && faceOf(target) && faceOf(target) !== faceOf(file))
        .map((target) => `${file} -> ${target}`),
    );
    expect(across).toEqual([]);
  });

  it("form no circle", () => {
    const graph = new Map([...SOURCE].map((file) => [file, importsOf(file)]));
    const state = new Map<string, "open" | "done">();
    const circles: string[] = [];
    const visit = (file: string, trail: string[]) => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        circles.push([...trail.slice(trail.indexOf(file)), file].join(" -> "));
        return;
      }
      state.set(file, "open");
      for (const target of graph.get(file)!) visit(target, [...trail, file]);
      state.set(file, "done");
    };
    for (const file of graph.keys()) visit(file, []);
    expect(circles).toEqual([]);
  });
});
