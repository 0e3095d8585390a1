import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount } from "../../scripts/lib/accounts.mjs";
import { freePort } from "../../scripts/lib/server.mjs";
import {
  commentSamples,
  type DocBlock,
  type DocSection,
  docSections,
  jsonValues,
  namedStatuses,
  promisedStatuses,
  SHELL_FENCES,
  shapeOf,
} from "../support/doc-examples";
import { type RecordedAnswer, startRecordingProxy } from "../support/recording-proxy";
import { ADMIN_TOKEN, type MediaTestBed, startWithMediaService } from "./server";

/**
 * Every shell block of README.md and docs/*.md, run in order with bash against a fresh server
 * (with a media service, as `npm run dev` has), as a newcomer would run them: from a project
 * directory with the demo account's keys in `.wrangler/state/demo-account.json` and the admin
 * token in `.dev.vars`. Each `##` section runs in a shell of its own, after the blocks before the
 * document's first `##` (its variables), so a section that uses what another one set fails.
 *
 * The blocks run as written, but for two rewrites: the docs' origin, http://127.0.0.1:8787,
 * becomes a proxy in front of the test's server that records every answer; and /tmp/ becomes a
 * directory of the test's (two runs at once must not share /tmp/photo.jpg). Each section must
 * exit 0 under `set -eu`; get no error status that its comments do not name (`# uploads now 403`)
 * and every status that a comment starts with (`# 401`, `# again: 404`); and every sample answer
 * it shows (a json block, unless marked `<!-- not checked: why -->`, or a comment `# {...}`) must
 * have the shape of one of the section's real answers. A block marked `<!-- not run: why -->` is
 * listed as a skipped test with its reason.
 */

const ROOT = path.resolve(import.meta.dirname, "../..");
const DOCS = [
  "README.md",
  ...readdirSync(path.join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`),
];
const DOCS_ORIGIN = "http://127.0.0.1:8787";

let bed: MediaTestBed;
let proxy: Awaited<ReturnType<typeof startRecordingProxy>>;
/** The project directory the blocks run in: links to the repository's test files and node_modules. */
let project: string;
const everyAnswer: RecordedAnswer[] = [];

beforeAll(async () => {
  const port = await freePort();
  // Loopback receivers allowed, as api.md's "Webhooks" has a local try set it in .dev.vars.
  bed = await startWithMediaService("docs-examples", {
    PUBLIC_ORIGIN: `http://127.0.0.1:${port}`,
    UNSAFE_ALLOW_LOOPBACK_LINKS: "true",
  });
  proxy = await startRecordingProxy(bed.server.url, port);
  project = bed.dir;
  await mkdir(path.join(project, ".wrangler/state"), { recursive: true });
  await mkdir(path.join(project, "tmp"));
  await symlink(path.join(ROOT, "test"), path.join(project, "test"));
  await symlink(path.join(ROOT, "node_modules"), path.join(project, "node_modules"));
  // As `npm run dev` makes them: the demo account by the admin API, the token in .dev.vars.
  const demo = await createAccount({ origin: bed.server.url, adminToken: ADMIN_TOKEN, name: "demo" });
  await writeFile(path.join(project, ".wrangler/state/demo-account.json"), JSON.stringify(demo, null, 2));
  await writeFile(path.join(project, ".dev.vars"), `ADMIN_TOKEN=${ADMIN_TOKEN}\n`);
});

afterAll(async () => {
  await proxy?.stop();
  await bed?.stop();
});

/** A section's script: strict, saying where it failed, then the document's preamble and its own blocks. */
function script(preamble: DocBlock[], blocks: DocBlock[]): { text: string; lines: string[] } {
  const text: string[] = ["set -eu", `trap 'echo "failed at script line $LINENO: $BASH_COMMAND" >&2' ERR`];
  const lines: string[] = ["", ""];
  for (const block of [...preamble, ...blocks]) {
    const code = block.code.replaceAll(DOCS_ORIGIN, proxy.url).replaceAll("/tmp/", `${project}/tmp/`);
    code.split("\n").forEach((line, i) => {
      text.push(line);
      lines.push(`${block.where.split(":")[0]}:${block.firstLine + i}`);
    });
  }
  return { text: `${text.join("\n")}\n`, lines };
}

function runBash(text: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", text], {
      cwd: project,
      env: { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH}` },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** An answer's JSON: its body, or the data of its one server-sent event (MCP may answer so). */
const parsed = (answer: RecordedAnswer): unknown => {
  const event = answer.contentType.startsWith("text/event-stream");
  try {
    return JSON.parse(event ? answer.body.replace(/^(?!data:).*$/gm, "").replaceAll("data:", "") : answer.body);
  } catch {
    return undefined;
  }
};

/** The samples a section shows: its json blocks (but those marked not checked) and its commands' comments. */
function samplesOf(section: DocSection, run: DocBlock[]): { where: string; value: unknown }[] {
  return section.blocks.flatMap((block) => {
    if (block.lang === "json" && !block.notChecked) {
      return jsonValues(block.code, block.where).map((value) => ({ where: block.where, value }));
    }
    if (!run.includes(block)) return [];
    return commentSamples(block.code, block.where).map((value) => ({ where: block.where, value }));
  });
}

/** What no block may run here unmarked: it would install, start or deploy the project from the test's directory. */
const NEVER_RUN = /\bnpm (install|ci|run dev|run deploy)\b|\bwrangler (login|deploy)\b/;

async function runSection(section: DocSection, preamble: DocBlock[]) {
  const run = section.blocks.filter((block) => SHELL_FENCES.has(block.lang) && !block.notRun);
  const commands = (block: DocBlock) => block.code.split("\n").map((line) => line.replace(/(^|\s)#(\s.*)?$/, ""));
  const unmarked = run.filter((block) => commands(block).some((line) => NEVER_RUN.test(line))).map((b) => b.where);
  expect(unmarked, "blocks that install, start or deploy: mark them <!-- not run: why -->").toEqual([]);
  const { text, lines } = script(preamble, run);
  const from = proxy.answers.length;
  const result = await runBash(text);
  const answers = proxy.answers.slice(from);
  everyAnswer.push(...answers);
  const failedAt = /failed at script line (\d+)/.exec(result.stderr);
  const where = failedAt ? ` (at ${lines[Number(failedAt[1]) - 1]})` : "";
  expect(result.code, `exit status${where}\n${result.stderr}\n${result.stdout.slice(-2000)}`).toBe(0);

  const allowed = new Set(run.flatMap((block) => [...namedStatuses(block.code)]));
  const refused = answers.filter((answer) => answer.status >= 400 && !allowed.has(answer.status));
  expect(
    refused.map((answer) => `${answer.method} ${answer.path}: ${answer.status} ${answer.body.slice(0, 300)}`),
    "error answers that no comment of the section names",
  ).toEqual([]);

  const promised = run.flatMap((block) => [...promisedStatuses(block.code)]);
  const got = new Set(answers.map((answer) => answer.status));
  expect(
    promised.filter((status) => !got.has(status)),
    "statuses a comment promises (`# 401`) that no answer had",
  ).toEqual([]);

  const shapes = new Set(
    answers
      .map(parsed)
      .filter((value) => value !== undefined)
      .map(shapeOf),
  );
  const stale = samplesOf(section, run).filter((sample) => !shapes.has(shapeOf(sample.value)));
  expect(
    stale.map((sample) => `${sample.where}: ${JSON.stringify(sample.value)}`),
    `samples of no answer of the section; the answers:\n${[...shapes].join("\n")}`,
  ).toEqual([]);
}

for (const file of DOCS) {
  const sections = docSections(ROOT, file);
  if (!sections.some((section) => section.blocks.some((block) => SHELL_FENCES.has(block.lang)))) continue;
  describe(file, () => {
    const preamble = sections[0]!.blocks.filter((block) => SHELL_FENCES.has(block.lang) && !block.notRun);
    for (const section of sections) {
      for (const block of section.blocks) {
        if (SHELL_FENCES.has(block.lang) && block.notRun) it.skip(`${block.where} not run: ${block.notRun}`, () => {});
      }
      const runs = section.blocks.some((block) => SHELL_FENCES.has(block.lang) && !block.notRun);
      if (!runs) continue;
      it(`"${section.title}"`, () => runSection(section, section.preamble ? [] : preamble), 90_000);
    }
  });
}

describe("the MCP tools", () => {
  it("are each named in README.md and docs/api.md", () => {
    const list = everyAnswer.map(parsed).find((value) => (value as { result?: { tools?: unknown } })?.result?.tools) as
      | { result: { tools: { name: string }[] } }
      | undefined;
    expect(list, "docs/api.md lists the tools (tools/list)").toBeDefined();
    const names = list!.result.tools.map((tool) => tool.name);
    expect(names.length).toBeGreaterThan(0);
    for (const doc of ["README.md", "docs/api.md"]) {
      const text = readFileSync(path.join(ROOT, doc), "utf8");
      expect(
        names.filter((name) => !text.includes(`\`${name}\``)),
        `tools ${doc} does not name`,
      ).toEqual([]);
    }
  });
});
