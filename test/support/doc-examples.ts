import { readFileSync } from "node:fs";
import path from "node:path";

/** The fences whose blocks are shell commands to run (the docs use ```sh). */
export const SHELL_FENCES = new Set(["sh", "bash", "shell"]);

export interface DocBlock {
  /** `file:line` of the opening fence. */
  where: string;
  lang: string;
  code: string;
  /** The first line of the block in the file. */
  firstLine: number;
  /** `<!-- not run: why -->` just before a shell block: why it cannot run in a test. */
  notRun?: string;
  /** `<!-- not checked: why -->` just before a json block: why it is no answer of the section's commands. */
  notChecked?: string;
}

export interface DocSection {
  file: string;
  title: string;
  /** Before the document's first `##`: every later section of the document runs it first (its variables). */
  preamble: boolean;
  blocks: DocBlock[];
}

const MARKER = /^<!-- (not run|not checked): (.+?) -->$/;

/** The sections of a markdown file (split at `##` headings; `###` stay in theirs) and their fenced blocks. */
export function docSections(root: string, file: string): DocSection[] {
  const lines = readFileSync(path.join(root, file), "utf8").split("\n");
  const sections: DocSection[] = [{ file, title: "(top)", preamble: true, blocks: [] }];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith("## ")) {
      sections.push({ file, title: line.slice(3).trim(), preamble: false, blocks: [] });
      continue;
    }
    const fence = /^```(\w*)\s*$/.exec(line);
    if (!fence) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    let before = start - 1;
    while (before >= 0 && lines[before]!.trim() === "") before--;
    const marker = MARKER.exec(lines[before]?.trim() ?? "");
    sections.at(-1)!.blocks.push({
      where: `${file}:${start + 1}`,
      lang: fence[1]!,
      code: body.join("\n"),
      firstLine: start + 2,
      notRun: marker?.[1] === "not run" ? marker[2] : undefined,
      notChecked: marker?.[1] === "not checked" ? marker[2] : undefined,
    });
  }
  return sections;
}

/** A shell line's comment (after a `#` that starts a word), or null. */
export function commentOf(line: string): string | null {
  const match = /(?:^|\s)#(?:\s|$)(.*)$/.exec(line);
  return match ? match[1]! : null;
}

/** The statuses a block's comments name (`# 401`, `# again: 404`): the error answers it may get. */
export function namedStatuses(code: string): Set<number> {
  const statuses = new Set<number>();
  for (const line of code.split("\n")) {
    for (const match of (commentOf(line) ?? "").matchAll(/\b([1-5]\d\d)\b/g)) statuses.add(Number(match[1]));
  }
  return statuses;
}

/**
 * The statuses a block's comments start with (`# 401`, `# again: 404`, `# 201 {...}`): what the
 * line's command is answered, so the section must get each of them.
 */
export function promisedStatuses(code: string): Set<number> {
  const statuses = new Set<number>();
  for (const line of code.split("\n")) {
    const match = /^(?:again:\s*)?([2-5]\d\d)\b/.exec(commentOf(line) ?? "");
    if (match) statuses.add(Number(match[1]));
  }
  return statuses;
}

/** The JSON values of a json block, one after another, each on one line or several. */
export function jsonValues(text: string, where: string): unknown[] {
  const values: unknown[] = [];
  let pending = "";
  for (const line of text.split("\n")) {
    pending += `${line}\n`;
    try {
      values.push(JSON.parse(pending));
      pending = "";
    } catch {}
  }
  if (pending.trim() !== "") throw new Error(`${where}: a sample that is no JSON: ${pending.trim()}`);
  return values;
}

/**
 * The answers a shell block shows in its comments (`# {"type":"success",...}`, continued on the
 * comment lines below when it spans several).
 */
export function commentSamples(code: string, where: string): unknown[] {
  const lines = code.split("\n");
  const samples: unknown[] = [];
  for (let i = 0; i < lines.length; i++) {
    const comment = commentOf(lines[i]!);
    const start = comment?.indexOf('{"') ?? -1;
    if (comment === null || start < 0) continue;
    let text = comment.slice(start);
    for (let next = i + 1; ; next++) {
      try {
        samples.push(JSON.parse(text));
        i = next - 1;
        break;
      } catch {}
      if (next >= lines.length || !/^\s*#/.test(lines[next]!)) {
        throw new Error(`${where}: a sample answer in a comment that is no JSON: ${comment}`);
      }
      text += commentOf(lines[next]!) ?? "";
    }
  }
  return samples;
}

/**
 * What a sample must have in common with a real answer: its keys, at every depth, and the type
 * of each value (null apart: a sample showing null where the service answers a value is stale).
 * The values themselves (ids, times) differ from one run to the next.
 */
export function shapeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return `[${[...new Set(value.map(shapeOf))].sort().join("|")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([key, item]) => `${key}:${shapeOf(item)}`).join(",")}}`;
  }
  return typeof value;
}
