import { readFile, rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { ROOT, wrangler } from "../../scripts/lib/server.mjs";

const TYPES_FILE = "worker-configuration.d.ts";
// Beside the committed file: the generated imports of the Durable Object classes are relative to it.
const FRESH_FILE = `.worker-configuration.${process.pid}.d.ts`;

afterAll(() => rm(path.join(ROOT, FRESH_FILE), { force: true }));

// `wrangler types --check` cannot tell: it regenerates without the --env-file the secrets come from.
it("worker-configuration.d.ts is what `npm run types` generates from wrangler.toml and .dev.vars.example", async () => {
  const script: string = JSON.parse(await readFile(path.join(ROOT, "package.json"), "utf8")).scripts.types;
  const [command, ...args] = script.split(" ");
  expect(command).toBe("wrangler");
  expect(args).toContain(TYPES_FILE);
  wrangler(args.map((arg) => (arg === TYPES_FILE ? FRESH_FILE : arg)));
  const fresh = (await readFile(path.join(ROOT, FRESH_FILE), "utf8")).replace(FRESH_FILE, TYPES_FILE);
  expect(fresh, "run `npm run types` and commit the result").toBe(await readFile(path.join(ROOT, TYPES_FILE), "utf8"));
});
