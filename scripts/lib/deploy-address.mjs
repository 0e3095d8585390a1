// The deployed Worker's address, read the way `wrangler deploy` states it. wrangler 4.164 prints
// the bindings table first, and it holds every var with its value (DNS_RESOLVER_URL is an https://
// address of someone else's): only the lines under "Deployed <name> triggers" name the Worker's
// own addresses (wrangler-dist/cli.js, triggersDeploy: a workers.dev host with https:// before it,
// a route or custom domain as its pattern with a note in brackets, then schedules and workflows).
// The admin token is sent to what this answers, so an address counts only when it is this
// Worker's: its workers.dev host, or a route or custom domain that wrangler.toml itself names.

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The Worker's name: the `name` of wrangler.toml's top level (before its first table). */
export const workerName = (config) => /^name\s*=\s*"([^"]+)"/m.exec(config.split(/^\[/m)[0])?.[1] ?? null;

/** The route and custom domain patterns wrangler.toml names (`route`, `routes`, `pattern`). */
function configuredPatterns(config) {
  const text = config.replace(/^\s*#.*$/gm, "");
  const patterns = [...text.matchAll(/^\s*route\s*=\s*"([^"]+)"/gm), ...text.matchAll(/\bpattern\s*=\s*"([^"]+)"/g)];
  const list = /^\s*routes\s*=\s*\[([\s\S]*?)\]\s*$/m.exec(text)?.[1] ?? "";
  // The bare strings of `routes = [...]`: an inline table's strings follow a `=` (its pattern was taken above).
  patterns.push(...list.matchAll(/(?:^|,)\s*"([^"]+)"/g));
  return new Set(patterns.map((match) => match[1]));
}

/**
 * https://<host> for a pattern that covers a whole host ("media.example.com" or
 * "media.example.com/*"), where the API's paths reach the Worker; null for a wildcard host or a
 * pattern under a path.
 */
function wholeHost(pattern) {
  const match = /^([a-z0-9.-]+)(\/\*?)?$/i.exec(pattern);
  return match ? `https://${match[1].toLowerCase()}` : null;
}

/**
 * The service's URL from `wrangler deploy`'s output (`config`: the wrangler.toml deployed): a
 * route or custom domain of wrangler.toml first (the address users are given), else the Worker's
 * workers.dev address; null when wrangler names neither.
 */
export function deployedUrl(output, config) {
  const name = workerName(config);
  if (!name) return null;
  const lines = output.split(/\r?\n/);
  const start = lines.findIndex((line) => new RegExp(`^Deployed ${escapeRegExp(name)} triggers\\b`).test(line));
  if (start < 0) return null;
  const targets = [];
  for (const line of lines.slice(start + 1)) {
    if (!/^\s+\S/.test(line)) break;
    targets.push(line.trim().replace(/\s+\(.*\)$/, ""));
  }
  const patterns = configuredPatterns(config);
  const domain = targets.find((target) => patterns.has(target) && wholeHost(target));
  if (domain) return wholeHost(domain);
  const workersDev = new RegExp(`^https://${escapeRegExp(name)}\\.[a-z0-9-]+(\\.fed)?\\.workers\\.dev$`, "i");
  return targets.find((target) => workersDev.test(target))?.toLowerCase() ?? null;
}
