// npm run deploy [-- --account NAME]: the first deploy and every later one (scripts/lib/deploy.mjs).
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { checkDeploy } from "./lib/deploy-check.mjs";
import { DeployError, deploy } from "./lib/deploy.mjs";
import { ROOT, runWrangler } from "./lib/server.mjs";

const { values } = parseArgs({ options: { account: { type: "string" } } });

const docker = spawnSync(process.env.WRANGLER_DOCKER_BIN || "docker", ["info"], { stdio: "ignore" }).status === 0;
const writeFile = (name, text, mode = 0o644) => {
  const file = path.join(ROOT, name);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text, { mode });
  chmodSync(file, mode);
};

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
  });
  for (const step of result.done) console.log(`- ${step}`);
  if (result.url) console.log(`\nThe service: ${result.url}`);
  if (result.adminTokenFile)
    console.log(`The new admin token is in ${result.adminTokenFile} (shown nowhere else; keep it safe).`);
  const token = result.adminTokenFile
    ? readFileSync(path.join(ROOT, result.adminTokenFile), "utf8").trim()
    : process.env.ADMIN_TOKEN;
  if (values.account && result.url && token) {
    const res = await fetch(`${result.url}/admin/accounts`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name: values.account }),
    });
    console.log(`Account ${values.account}: ${res.status}\n${await res.text()}`);
  } else if (result.url) {
    console.log(
      `First account: curl -s -X POST -H "Authorization: Bearer $(cat ${result.adminTokenFile ?? "<your admin token>"})" ` +
        `-H "Content-Type: application/json" -d '{"name":"me"}' ${result.url}/admin/accounts` +
        "\n(or npm run deploy -- --account me)",
    );
  }
} catch (error) {
  console.error(error instanceof DeployError ? error.message : error);
  process.exitCode = 1;
}
