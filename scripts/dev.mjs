// `npm run dev`: local D1/R2 state, migrations, the media service, the Worker on 127.0.0.1:$PORT
// and a demo account.
//   PORT       port to listen on (default 8787)
//   STATE_DIR  where local D1/R2/Durable Object state lives (default .wrangler/state)
//   DEV_CRON_SECONDS  how often the scheduled job runs (default 60; 0: never)
//   INSPECTOR_PORT    devtools port (default 9229, or a free one when 9229 is taken)
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { createAccount } from "./lib/accounts.mjs";
import { startMediaService } from "./lib/media.mjs";
import { freePort, portInUse, ROOT, startServer } from "./lib/server.mjs";

const port = Number(process.env.PORT || 8787);
// Another wrangler dev (or a test's) may hold the usual devtools port: then any free one does.
const inspectorPort = Number(process.env.INSPECTOR_PORT) || ((await portInUse(9229)) ? await freePort() : 9229);
const stateDir = path.resolve(ROOT, process.env.STATE_DIR || ".wrangler/state");
mkdirSync(stateDir, { recursive: true });

const devVars = path.join(ROOT, ".dev.vars");
if (!existsSync(devVars)) {
  copyFileSync(path.join(ROOT, ".dev.vars.example"), devVars);
  console.log("Created .dev.vars from .dev.vars.example.");
}
let secrets = readFileSync(devVars, "utf8");
let adminToken = /^ADMIN_TOKEN=(.*)$/m.exec(secrets)?.[1]?.trim();
// The Worker leaves /admin off with a token under 32 characters (src/api/admin.ts); an older
// .dev.vars may hold one that short: it gets a random one, kept in .dev.vars.
if (adminToken && adminToken.length < 32) {
  adminToken = randomBytes(24).toString("hex");
  secrets = secrets.replace(/^ADMIN_TOKEN=.*$/m, `ADMIN_TOKEN=${adminToken}`);
  writeFileSync(devVars, secrets);
  console.log(
    "ADMIN_TOKEN in .dev.vars was shorter than the 32 characters /admin needs: replaced it with a random one.",
  );
}
// An older .dev.vars may predate the media service: a random secret then does for this run.
const mediaSecret = /^MEDIA_SECRET=(.*)$/m.exec(secrets)?.[1]?.trim() || randomBytes(24).toString("hex");
const linkSecret = /^LINK_SIGNING_SECRET=(.*)$/m.exec(secrets)?.[1]?.trim() || randomBytes(24).toString("hex");

// No Docker here: the media service (container/) runs as a plain process beside the Worker.
const media = await startMediaService({ port: await freePort(), secret: mediaSecret, log: true });
console.log(`Media service on ${media.url}.`);

console.log(`Applying migrations and starting the service (state in ${path.relative(ROOT, stateDir) || stateDir})...`);
let server;
try {
  server = await startServer({
    port,
    inspectorPort,
    stateDir,
    log: true,
    vars: { MEDIA_SERVICE_URL: media.url, MEDIA_SECRET: mediaSecret, LINK_SIGNING_SECRET: linkSecret },
  });
} catch (error) {
  await media.stop();
  throw error;
}

/** The demo account's keys are kept beside the local state, since keys are only shown once. */
async function demoAccount() {
  const file = path.join(stateDir, "demo-account.json");
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, "utf8"));
    const check = await fetch(`${server.url}/api`, { headers: { "X-API-Key": saved.full_key } });
    if (check.status !== 401) return saved;
  }
  if (!adminToken) throw new Error("ADMIN_TOKEN is not set in .dev.vars; cannot create the demo account.");
  const data = await createAccount({ origin: server.url, adminToken, name: "demo" });
  writeFileSync(file, JSON.stringify(data, null, 2));
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
