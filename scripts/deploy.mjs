// npm run deploy [-- --account NAME]: the first deploy and every later one (scripts/lib/deploy.mjs).
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { checkDeploy } from "./lib/deploy-check.mjs";
import { DeployError, deploy } from "./lib/deploy.mjs";
import { writeProjectFile } from "./lib/files.mjs";
import { ROOT, runWrangler } from "./lib/server.mjs";

const { values } = parseArgs({ options: { account: { type: "string" } } });

const docker = spawnSync(process.env.WRANGLER_DOCKER_BIN || "docker", ["info"], { stdio: "ignore" }).status === 0;
const writeFile = (name, text, mode) => writeProjectFile(ROOT, name, text, mode);

try {
  const figures = checkDeploy();
  console.log(`Checked: ${figures.gzipKib} KiB compressed, ${figures.startupMs} ms to start.`);
  const result = await deploy({
    run: (args) => runWrangler(args),
    config: readFileSync(path.join(ROOT, "wrangler.toml"), "utf8"),
    docker,
    writeFile,
    removeFile: (name) => rmSync(path.join(ROOT, name), { force: true }),
    log: console.log,
    account: values.account,
    adminToken: process.env.ADMIN_TOKEN,
  });
  for (const step of result.done) console.log(`- ${step}`);
  if (result.url) console.log(`\nThe service: ${result.url}`);
  if (result.adminTokenFile)
    console.log(`The new admin token is in ${result.adminTokenFile} (shown nowhere else; keep it safe).`);
  if (result.account) console.log(`Account ${values.account}:\n${JSON.stringify(result.account, null, 2)}`);
  if (result.next) console.log(`\n${result.next}`);
  if (values.account && !result.account) process.exitCode = 1;
} catch (error) {
  console.error(error instanceof DeployError ? error.message : error);
  process.exitCode = 1;
}
