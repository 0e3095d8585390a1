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
  ["src/webhooks/"],
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

/** Lines a function of src/ may take, parsers excepted; lines a file of src/ may take, two excepted. */
const FUNCTION_LINES = 80;
const FILE_LINES = 300;

/**
 * The functions allowed to be longer: parsers whose one loop over their input reads best whole
 * (split, its state would be passed between the parts on every byte).
 */
const LONG_FUNCTIONS: Record<string, string> = {
  "src/http/multipart.ts multipartEvents": "the streaming multipart/form-data parser: one state machine over the body",
  "src/http/urlencoded.ts urlencodedFields": "the streaming urlencoded parser: names and values cut at & and =",
};

/** The files allowed to be longer, and why. */
const LONG_FILES: Record<string, string> = {
  "src/model/schema.ts": "every table and its indexes, as drizzle-kit reads them to write the migrations",
  "src/site/browser/uploader.js": "the browser's uploader: one classic script, served as written",
};

/**
 * Every function of a TypeScript file of src/ (declarations, methods, accessors, function
 * expressions and arrows, named for what holds them), with its length in lines, read by the
 * TypeScript compiler's own parser (the API of `typescript`, which runs the compiler beside us).
 */
async function functionLengths(files: string[]): Promise<{ name: string; lines: number }[]> {
  const { API } = await import("typescript/unstable/sync");
  const ast = await import("typescript/unstable/ast");
  type Node = import("typescript/unstable/ast").Node;
  // A project of exactly these files, parsed and not resolved any further.
  const config = path.join(ROOT, "sizes.tsconfig.json");
  const project = JSON.stringify({
    compilerOptions: { noLib: true, noResolve: true, types: [] },
    files: files.map((file) => path.join(ROOT, file)),
  });
  const api = new API({ cwd: ROOT, fs: { readFile: (name) => (name === config ? project : undefined) } });
  try {
    const program = api.updateSnapshot({ openProject: config }).getProject(config)!.program;
    return files.flatMap((file) => {
      const text = readFileSync(path.join(ROOT, file), "utf8");
      const source = program.getSourceFile(path.join(ROOT, file))!;
      const lineOf = (at: number) => text.slice(0, at).split("\n").length;
      const nameOf = (node: Node): string => {
        const holder = ast.isArrowFunction(node) || ast.isFunctionExpression(node) ? node.parent : node;
        const named = holder as Node & { name?: Node };
        if (named.name) return text.slice(named.name.pos, named.name.end).trim();
        return ast.isConstructorDeclaration(node) ? "constructor" : `(function at line ${lineOf(node.pos)})`;
      };
      const found: { name: string; lines: number }[] = [];
      const visit = (node: Node) => {
        const isFunction =
          ast.isFunctionDeclaration(node) ||
          ast.isMethodDeclaration(node) ||
          ast.isConstructorDeclaration(node) ||
          ast.isGetAccessorDeclaration(node) ||
          ast.isSetAccessorDeclaration(node) ||
          ast.isFunctionExpression(node) ||
          ast.isArrowFunction(node);
        if (isFunction && (node as Node & { body?: Node }).body) {
          const lines = lineOf(node.end) - lineOf(node.getStart(source)) + 1;
          found.push({ name: `${file} ${nameOf(node)}`, lines });
        }
        node.forEachChild(visit);
      };
      visit(source);
      return found;
    });
  } finally {
    api.close();
  }
}

describe("sizes", () => {
  it(`no function of src/ is over ${FUNCTION_LINES} lines, but the parsers named`, async () => {
    const files = typescriptFiles("src").filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"));
    const long = (await functionLengths(files)).filter(({ lines }) => lines > FUNCTION_LINES);
    const unexcused = long.filter(({ name }) => !(name in LONG_FUNCTIONS));
    expect(unexcused.map(({ name, lines }) => `${name} (${lines} lines)`)).toEqual([]);
    // An exception that is no longer needed goes from the list.
    expect(Object.keys(LONG_FUNCTIONS).filter((name) => !long.some((it) => it.name === name))).toEqual([]);
  });

  it(`no file of src/ is over ${FILE_LINES} lines, but the two named`, () => {
    const lengths = typescriptFiles("src").map((file) => ({
      file,
      lines: readFileSync(path.join(ROOT, file), "utf8").split("\n").length - 1,
    }));
    const long = lengths.filter(({ lines }) => lines > FILE_LINES).map(({ file }) => file);
    expect(long.filter((file) => !(file in LONG_FILES))).toEqual([]);
    expect(Object.keys(LONG_FILES).filter((file) => !long.includes(file))).toEqual([]);
  });
});
