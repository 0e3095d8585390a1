// `npm run deploy`, step by step, with wrangler given as a function (`run`) so that a test can stand
// in for it and the Cloudflare account. Idempotent: each resource and secret is made only when
// missing, and nothing that exists is changed. docs/operations.md, "Deploying", says why each
// step comes where it does.
import { randomBytes } from "node:crypto";
import { createAccount } from "./accounts.mjs";
import { deployedUrl, workerName } from "./deploy-address.mjs";

/** The secrets the Worker needs, each a long random value when this script makes it. */
export const SECRETS = ["ADMIN_TOKEN", "MEDIA_SECRET", "LINK_SIGNING_SECRET"];
/** The configuration a deploy uses, written beside wrangler.toml with the database's real id. */
export const DEPLOY_CONFIG = "wrangler.deploy.toml";

const PLACEHOLDER_ID = /^database_id = .*$/m;

export class DeployError extends Error {}

/** The queues wrangler.toml names (producers, consumers, dead-letter queues), each once. */
export const queueNames = (config) => [
  ...new Set([...config.matchAll(/^\s*(?:queue|dead_letter_queue)\s*=\s*"([^"]+)"/gm)].map((m) => m[1])),
];

/** Runs wrangler; stops the deploy with its output when it fails. */
function must(run, args, what, options) {
  const result = run(args, options);
  if (result.status !== 0) throw new DeployError(`${what} failed:\n${result.stdout}${result.stderr}`.trim());
  return result.stdout;
}

const databaseNamed = (run, name) => {
  const list = JSON.parse(must(run, ["d1", "list", "--json"], "Listing the D1 databases"));
  return list.find((db) => db.name === name) ?? null;
};

const ADMIN_TOKEN_FILE = ".wrangler/deploy/admin-token";

/** The command that creates an account called "me" on the service at `origin`. */
const accountCommand = (origin, tokenFile) =>
  `curl -s -X POST -H "Authorization: Bearer $(cat ${tokenFile ?? "<your admin token>"})" ` +
  `-H "Content-Type: application/json" -d '{"name":"me"}' ${origin}/admin/accounts`;

/**
 * Deploys the Worker of `config` (wrangler.toml's text). `docker`: whether a Docker daemon runs
 * (the container is built and rolled out only then). `writeFile(name, text, mode)` keeps the
 * deploy configuration, the secrets file (removed once the deploy ends) and the new admin token.
 * `account`: a first account to create, with the new admin token or else `adminToken`, on the
 * deployed Worker's own address only (`fetch` sends it). Returns what was done, the service's URL
 * (null when wrangler names none of the Worker's), the account, and what is left to do by hand
 * (`next`); throws DeployError, saying what to do, when a step fails, before anything later.
 */
export async function deploy({
  run,
  config,
  docker,
  writeFile,
  removeFile,
  log,
  account,
  adminToken,
  fetch = globalThis.fetch,
  random = () => randomBytes(32).toString("base64url"),
}) {
  const done = [];
  const whoami = run(["whoami"]);
  if (whoami.status !== 0 || /not authenticated/i.test(whoami.stdout + whoami.stderr))
    throw new DeployError("Not logged in to Cloudflare: run `npx wrangler login` (or set CLOUDFLARE_API_TOKEN).");

  const databaseName = /^database_name = "([^"]+)"/m.exec(config)?.[1];
  const bucketName = /^bucket_name = "([^"]+)"/m.exec(config)?.[1];
  if (!databaseName || !bucketName) throw new DeployError("wrangler.toml names no D1 database or R2 bucket.");

  // The database before the migrations, the migrations before the code: a Worker never runs on a
  // schema it does not know (migrations only add, so the Worker still running knows the new one).
  let database = databaseNamed(run, databaseName);
  if (!database) {
    must(run, ["d1", "create", databaseName], `Creating the D1 database ${databaseName}`);
    database = databaseNamed(run, databaseName);
    if (!database) throw new DeployError(`The D1 database ${databaseName} was created but is not listed.`);
    done.push(`created the D1 database ${databaseName}`);
  }
  const buckets = must(run, ["r2", "bucket", "list"], "Listing the R2 buckets");
  if (!new RegExp(`^name:\\s+${bucketName}$`, "m").test(buckets)) {
    must(run, ["r2", "bucket", "create", bucketName], `Creating the R2 bucket ${bucketName}`);
    done.push(`created the R2 bucket ${bucketName}`);
  }
  // Queues before the code too: wrangler refuses to deploy a Worker bound to a queue that does not exist.
  const queues = must(run, ["queues", "list"], "Listing the queues");
  for (const queue of queueNames(config)) {
    if (new RegExp(`[│|]\\s*${queue}\\s*[│|]`).test(queues)) continue;
    must(run, ["queues", "create", queue], `Creating the queue ${queue}`);
    done.push(`created the queue ${queue}`);
  }
  writeFile(DEPLOY_CONFIG, config.replace(PLACEHOLDER_ID, `database_id = "${database.uuid}"`));
  must(run, ["d1", "migrations", "apply", "DB", "--remote", "--config", DEPLOY_CONFIG], "Applying the D1 migrations");
  done.push("applied pending D1 migrations");

  // Secrets: only the missing ones are made, and a deploy's secrets file only adds.
  // A Worker not deployed yet has none; any other failure stops the deploy, since taking it for
  // "none" would send new values over the secrets that exist.
  const listed = run(["secret", "list", "--format", "json", "--config", DEPLOY_CONFIG]);
  const neverDeployed = listed.status !== 0 && /Worker "[^"]+" not found/.test(listed.stdout + listed.stderr);
  if (listed.status !== 0 && !neverDeployed)
    throw new DeployError(`Listing the Worker's secrets failed:\n${listed.stdout}${listed.stderr}`.trim());
  const present = new Set(neverDeployed ? [] : JSON.parse(listed.stdout).map((s) => s.name));
  const missing = Object.fromEntries(SECRETS.filter((name) => !present.has(name)).map((name) => [name, random()]));
  const deployArgs = ["deploy", "--config", DEPLOY_CONFIG];
  if (Object.keys(missing).length) {
    writeFile(".wrangler/deploy/secrets.json", JSON.stringify(missing), 0o600);
    deployArgs.push("--secrets-file", ".wrangler/deploy/secrets.json");
    done.push(`created the secrets ${Object.keys(missing).join(", ")}`);
  }
  if (missing.ADMIN_TOKEN) writeFile(ADMIN_TOKEN_FILE, `${missing.ADMIN_TOKEN}\n`, 0o600);
  if (!docker) {
    deployArgs.push("--containers-rollout=none");
    log(
      "No Docker daemon: the Worker goes out without building the media container. Media work (video, " +
        "HEIC, large images) waits until `npm run deploy` runs where Docker does.",
    );
  }
  let deployed;
  try {
    deployed = must(run, deployArgs, "Deploying the Worker");
  } finally {
    if (Object.keys(missing).length) removeFile(".wrangler/deploy/secrets.json");
  }
  done.push(docker ? "deployed the Worker and its container" : "deployed the Worker (container not built)");
  const url = deployedUrl(deployed, config);
  const adminTokenFile = missing.ADMIN_TOKEN ? ADMIN_TOKEN_FILE : null;
  const result = { done, url, adminTokenFile, account: null, next: null };
  if (!url) {
    result.next =
      `wrangler named no address of ${workerName(config)} (its workers.dev one, or a route or custom domain of ` +
      "wrangler.toml), so the admin token was sent nowhere. Find the Worker's address in the Cloudflare " +
      `dashboard (Workers & Pages, ${workerName(config)}, Domains & Routes), then create the first account by ` +
      `hand:\n  ${accountCommand("https://<the Worker's address>", adminTokenFile)}`;
    return result;
  }
  const token = missing.ADMIN_TOKEN ?? adminToken;
  if (!account || !token) {
    result.next =
      (account ? "No admin token (ADMIN_TOKEN) to create the account with: create it by hand.\n" : "") +
      `First account: ${accountCommand(url, adminTokenFile)}\n(or npm run deploy -- --account me)`;
    return result;
  }
  try {
    // A redirect is refused rather than followed: the token goes to the deployed Worker alone.
    const send = (target, init) => fetch(target, { ...init, redirect: "error" });
    result.account = await createAccount({ origin: url, adminToken: token, name: account, send });
  } catch (error) {
    result.next = `Creating the account ${account} failed (${String(error)}); by hand: ${accountCommand(url, adminTokenFile)}`;
  }
  return result;
}
