import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";
import { MEDIA_INSTANCE_TYPE, MEDIA_INSTANCES, MEDIA_JOB_RUNNERS } from "../../src/media/container-size";

const ROOT = path.resolve(import.meta.dirname, "../..");

it("deploys the containers the Worker spreads its jobs over, of the measured size", () => {
  const toml = readFileSync(path.join(ROOT, "wrangler.toml"), "utf8");
  const containers = /\[\[containers\]\]([\s\S]*?)(?:\n\[|$)/.exec(toml)![1]!;
  expect(/^instance_type = "([^"]+)"/m.exec(containers)?.[1]).toBe(MEDIA_INSTANCE_TYPE);
  expect(Number(/^max_instances = (\d+)/m.exec(containers)?.[1])).toBe(MEDIA_INSTANCES);
});

it("runs no more media job runners at once than the containers have places for", () => {
  const toml = readFileSync(path.join(ROOT, "wrangler.toml"), "utf8");
  const concurrency = /\[workflows\.concurrency\]([\s\S]*?)(?:\n\[|$)/.exec(toml)![1]!;
  expect(Number(/^limit = (\d+)/m.exec(concurrency)?.[1])).toBe(MEDIA_JOB_RUNNERS);
});
