// `npm run dev`: local D1/R2 state, migrations, the media service, the Worker on 127.0.0.1:$PORT
// and a demo account.
//   PORT       port to listen on (default 8787, or a free one when 8787 is taken)
//   STATE_DIR  where local D1/R2/Durable Object state lives (default .wrangler/state)
//   DEV_CRON_SECONDS  how often the scheduled job runs (default 60; 0: never)
//   INSPECTOR_PORT    devtools port (default 9229, or a free one when 9229 is taken)
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { parseEnv } from "node:util";
import { createAccount } from "./lib/accounts.mjs";
import { writeProjectFile } from "./lib/files.mjs";
import { startMediaService } from "./lib/media.mjs";
import { DevPortError, portSetting, startDevServer } from "./lib/dev-server.mjs";
import { freePort, ROOT } from "./lib/server.mjs";

// Another wrangler dev (or a test's) may hold a usual port: unless set, any free one does.
let port;
let inspectorPort;
try {
  port = portSetting(process.env, "PORT");
  inspectorPort = portSetting(process.env, "INSPECTOR_PORT");
} catch (error) {
  console.error(error.message);
  process.exit(1);
}
const stateDir = path.resolve(ROOT, process.env.STATE_DIR || ".wrangler/state");
mkdirSync(stateDir, { recursive: true });

// The secrets reach wrangler in .dev.vars, which it reads itself, never on its command line
// (which `ps` shows to every user of the machine): the file is kept readable by its owner alone.
const devVars = path.join(ROOT, ".dev.vars");
let secrets = existsSync(devVars) ? readFileSync(devVars, "utf8") : readFileSync(`${devVars}.example`, "utf8");
const fromExample = !existsSync(devVars);
const read = (name) => parseEnv(secrets)[name] || undefined; // as wrangler reads it (dotenv)
const changes = [];
// The Worker leaves /admin off with a token under 32 characters (src/api/admin/); an older
// .dev.vars may hold one that short, or predate the media service or signed links: such a secret
// gets a random value, kept in .dev.vars.
for (const name of ["ADMIN_TOKEN", "MEDIA_SECRET", "LINK_SIGNING_SECRET"]) {
  const value = read(name);
  if (value && (name !== "ADMIN_TOKEN" || value.length >= 32)) continue;
  const line = `${name}=${randomBytes(24).toString("hex")}`;
  const pattern = new RegExp(`^${name}=.*$`, "m");
  secrets = pattern.test(secrets) ? secrets.replace(pattern, line) : `${secrets.replace(/\n?$/, "\n")}${line}\n`;
  changes.push(name);
}
if (fromExample || changes.length) {
  if (!fromExample && lstatSync(devVars).isSymbolicLink())
    throw new Error(
      `.dev.vars is a link, so it is left as it is: give it ${changes.join(", ")} (16+ characters; ADMIN_TOKEN 32+).`,
    );
  writeProjectFile(ROOT, ".dev.vars", secrets, 0o600);
  if (fromExample) console.log("Created .dev.vars from .dev.vars.example.");
  if (changes.length)
    console.log(`.dev.vars lacked ${changes.join(", ")} (or had one too short): gave each a random value.`);
} else if (!lstatSync(devVars).isSymbolicLink() && statSync(devVars).mode & 0o077) {
  chmodSync(devVars, 0o600);
  console.log(".dev.vars holds secrets: made it readable by you alone (mode 600).");
}
const adminToken = read("ADMIN_TOKEN");
const mediaSecret = read("MEDIA_SECRET");

// No Docker here: the media service (container/) runs as a plain process beside the Worker.
const media = await startMediaService({ port: await freePort(), secret: mediaSecret, log: true });
console.log(`Media service on ${media.url}.`);

console.log(`Applying migrations and starting the service (state in ${path.relative(ROOT, stateDir) || stateDir})...`);
let server;
try {
  server = await startDevServer({
    port,
    inspectorPort,
    stateDir,
    log: true,
    vars: { MEDIA_SERVICE_URL: media.url },
    onRetry: console.log,
  });
} catch (error) {
  await media.stop();
  console.error(error instanceof DevPortError ? error.message : error);
  process.exit(1);
}

/** The demo account's keys are kept beside the local state, since keys are only shown once. */
async function demoAccount() {
  const file = path.join(stateDir, "demo-account.json");
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, "utf8"));
    const check = await fetch(`${server.url}/api`, { headers: { "X-API-Key": saved.full_key } });
    if (check.status !== 401) return saved;
  }
  const data = await createAccount({ origin: server.url, adminToken, name: "demo" });
  writeProjectFile(stateDir, "demo-account.json", JSON.stringify(data, null, 2), 0o600); // its keys
  return data;
}

try {
  const demo = await demoAccount();
  console.log(`
Service ready on ${server.url}   (API base URL: ${server.url}/api)
Demo account ${demo.id}
  full key:        ${demo.full_key}
  upload-only key: ${demo.upload_key}

Try:  curl -H "X-API-Key: ${demo.full_key}" -F "uploads=@photo.jpg" ${server.url}/api
  or: ${server.url}/upload in a browser (paste a key), ${server.url}/gallery for public uploads
Admin API token: from .dev.vars (ADMIN_TOKEN). Stop with Ctrl+C.
`);
} catch (error) {
  console.error(String(error));
  await Promise.all([server.stop(), media.stop()]);
  process.exit(1);
}

/**
 * Deployed, Cron Triggers run the scheduled job (expiry, sweeps, media retries). wrangler dev has
 * no scheduler, so it is fired here through wrangler's local trigger endpoint, once a minute
 * (DEV_CRON_SECONDS; 0 turns it off): shorter than the deployed 5 minutes, so that local expiry
 * and retries show up promptly.
 */
const cronSeconds = Number(process.env.DEV_CRON_SECONDS ?? 60);
let cronRan = false;
const cron = encodeURIComponent(
  /^crons\s*=\s*\["([^"]+)"/m.exec(readFileSync(path.join(ROOT, "wrangler.toml"), "utf8"))?.[1] ?? "* * * * *",
);
const ticker =
  cronSeconds > 0
    ? setInterval(async () => {
        try {
          const res = await fetch(`${server.url}/cdn-cgi/handler/scheduled?cron=${cron}`);
          if (!res.ok) console.error(`[cron] the scheduled job answered ${res.status}`);
          else if (!cronRan) console.log(`[cron] the scheduled job ran; it runs again every ${cronSeconds} s.`);
          cronRan ||= res.ok;
        } catch (error) {
          console.error(`[cron] could not reach the service: ${String(error)}`);
        }
      }, cronSeconds * 1000)
    : undefined;
if (ticker) console.log(`The scheduled job runs every ${cronSeconds} s (DEV_CRON_SECONDS).`);

let stopping = false;
const shutdown = async (code = 0) => {
  if (stopping) return;
  stopping = true;
  clearInterval(ticker);
  await Promise.all([server.stop(), media.stop()]);
  process.exit(code);
};
process.on("SIGINT", () => shutdown(0));
process.on("SIGTERM", () => shutdown(0));
// Either process ending on its own ends the whole service, with a reason, instead of leaving half of it running.
server.exited.then((code) => {
  if (stopping) return;
  console.error(`wrangler dev exited on its own (${code}); stopping the media service.`);
  shutdown(typeof code === "number" && code !== 0 ? code : 1);
});
media.exited.then((code) => {
  if (stopping) return;
  console.error(`The media service exited on its own (${code}):\n${media.output().slice(-2000)}\nStopping the Worker.`);
  shutdown(1);
});
