// `npm run dev`'s Worker on its two ports: PORT and INSPECTOR_PORT when they are set, else the
// usual 8787 and 9229 when free, else free ones. A port free when checked may be taken before
// wrangler binds it (another server starting at the same moment): wrangler then fails with
// "Address already in use ... specify a different port with --port", a flag `npm run dev` does not
// take. The ports that were not set are then chosen again; every message names PORT and
// INSPECTOR_PORT, the settings `npm run dev` does take.
import { applyMigrations, freePort, portInUse, startServer } from "./server.mjs";

export class DevPortError extends Error {}

const ADDRESS_IN_USE = /Address already in use|is already in use on 127\.0\.0\.1/;

/** PORT or INSPECTOR_PORT of `env` as a port number; undefined when unset. */
export function portSetting(env, name) {
  const text = env[name];
  if (text === undefined || text === "") return undefined;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new DevPortError(`${name}=${text} is not a port: give a number from 1 to 65535, or leave ${name} unset.`);
  return port;
}

/** The usual port on the first attempt when it is free, else a free one. */
const usualOrFree = async (usual, attempt) => (attempt === 1 && !(await portInUse(usual)) ? usual : freePort());

/**
 * Checks the ports given, applies the migrations once, then starts the Worker (startServer's
 * `options`) on `port` and `inspectorPort` where given (PORT, INSPECTOR_PORT), on ports that
 * `pick(usual, attempt)` chooses otherwise; up to `attempts` times while wrangler finds a chosen
 * port taken (each retry told to `onRetry`). Throws DevPortError naming the variable to set when a
 * port given is taken, or when every attempt found one taken.
 */
export async function startDevServer({
  port,
  inspectorPort,
  pick = usualOrFree,
  attempts = 3,
  start = startServer,
  onRetry = () => {},
  migrate = true,
  ...options
}) {
  for (const [name, value] of [
    ["PORT", port],
    ["INSPECTOR_PORT", inspectorPort],
  ]) {
    if (value !== undefined && (await portInUse(value)))
      throw new DevPortError(
        `Port ${value} (${name}) is already in use on 127.0.0.1: stop what holds it, or set ${name} to a free ` +
          `port (${name}=<port> npm run dev), or leave it unset for a free one.`,
      );
  }
  if (migrate) applyMigrations({ stateDir: options.stateDir, config: options.config, cwd: options.cwd });
  for (let attempt = 1; ; attempt++) {
    const chosen = {
      port: port ?? (await pick(8787, attempt)),
      inspectorPort: inspectorPort ?? (await pick(9229, attempt)),
    };
    try {
      return await start({ ...options, ...chosen, migrate: false });
    } catch (error) {
      if (!ADDRESS_IN_USE.test(String(error))) throw error;
      const both = `port ${chosen.port} (PORT) or devtools port ${chosen.inspectorPort} (INSPECTOR_PORT)`;
      if ((port !== undefined && inspectorPort !== undefined) || attempt >= attempts)
        throw new DevPortError(
          `wrangler found ${both} taken as it started (${attempt === 1 ? "once" : `${attempt} times`}): another ` +
            "process took it after it was checked. Start again, or set PORT and INSPECTOR_PORT to free ports " +
            "(PORT=<port> INSPECTOR_PORT=<port> npm run dev).",
        );
      onRetry(`${both[0].toUpperCase()}${both.slice(1)} was taken as wrangler started; trying other ports.`);
    }
  }
}
