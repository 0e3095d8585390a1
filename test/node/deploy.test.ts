import {
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DEPLOY_CONFIG, DeployError, deploy, type WranglerResult } from "../../scripts/lib/deploy.mjs";
import { writeProjectFile } from "../../scripts/lib/files.mjs";
import { ROOT } from "../../scripts/lib/server.mjs";

const CONFIG = readFileSync(path.join(ROOT, "wrangler.toml"), "utf8");
const WORKERS_DEV = "https://media-host.someone.workers.dev";

/**
 * What `wrangler deploy` 4.164 prints on stdout (node_modules/wrangler/wrangler-dist/cli.js): the
 * upload's size and start-up time, the bindings table (printBindings: every var of wrangler.toml
 * with its value, DNS_RESOLVER_URL's https:// address among them), the containers, "Uploaded", then
 * triggersDeploy's "Deployed <name> triggers" with one indented line per target (https:// only
 * before a workers.dev host; a route or custom domain as its pattern with a note in brackets) or
 * "No targets deployed for <name>", and the version.
 */
function deployOutput(config: string, targets: string[]) {
  const row = (binding: string, resource: string) => `${binding.padEnd(84)}${resource.padEnd(26)}`;
  const vars = [
    ...(/^\[vars\]$([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(config)?.[1] ?? "").matchAll(/^(\w+) = "([^"]*)"/gm),
  ];
  const triggers = targets.length
    ? ["Deployed media-host triggers (2.87 sec)", ...targets.map((target) => `  ${target}`)]
    : ["No targets deployed for media-host (0.91 sec)"];
  return [
    "",
    " ⛅️ wrangler 4.164.0",
    "────────────────────",
    "Total Upload: 3444.91 KiB / gzip: 853.39 KiB",
    "Worker Startup Time: 271 ms",
    "Your Worker has access to the following bindings:",
    row("Binding", "Resource"),
    row("env.MEDIA_CONTAINER (MediaContainer)", "Durable Object"),
    row("env.RATE_LIMITER (RateLimiter)", "Durable Object"),
    row("env.VARIANT_LOCKS (VariantLocks)", "Durable Object"),
    row("env.MEDIA_JOBS (MediaJobWorkflow)", "Workflow"),
    row("env.DB (media-host)", "D1 Database"),
    row("env.FILES (media-host-files)", "R2 Bucket"),
    ...vars.map(([, name, value]) => row(`env.${name} ("${value}")`, "Environment Variable")),
    "",
    "The following containers are available:",
    `- media-host-mediacontainer (${ROOT}/container/Dockerfile)`,
    "",
    "Uploaded media-host (14.02 sec)",
    ...triggers,
    "Current Version ID: 5e3c2f0a-8d1b-4c6e-9f7a-2b4d6e8f0a1c",
    "",
  ].join("\n");
}

/**
 * A Cloudflare account as wrangler shows it, and wrangler itself: each call is recorded and
 * answered as wrangler 4.164 answers it (its JSON where it has one, its text otherwise).
 */
function standIn({
  loggedIn = true,
  failMigration = false,
  secretsUnreachable = false,
  config = CONFIG,
  targets = [WORKERS_DEV, "schedule: * * * * *", "workflow: media-jobs"],
} = {}) {
  const account = {
    databases: [] as { uuid: string; name: string }[],
    buckets: [] as string[],
    queues: [] as string[],
    secrets: new Map<string, string>(),
    worker: false,
  };
  const files = new Map<string, { text: string; mode?: number }>();
  const calls: string[] = [];
  const overwritten: string[] = [];
  const ok = (stdout = ""): WranglerResult => ({ status: 0, stdout, stderr: "" });
  const fail = (stderr: string): WranglerResult => ({ status: 1, stdout: "", stderr });
  const run = (args: string[]): WranglerResult => {
    calls.push(args.join(" "));
    const [command, sub, third] = args;
    if (command === "whoami")
      return ok(loggedIn ? "You are logged in with an OAuth Token." : "You are not authenticated.");
    if (command === "d1" && sub === "list") return ok(JSON.stringify(account.databases));
    if (command === "d1" && sub === "create") {
      account.databases.push({ uuid: `uuid-${account.databases.length + 1}`, name: third! });
      return ok(`Successfully created DB '${third}'`);
    }
    if (command === "r2" && sub === "bucket" && third === "list")
      return ok(account.buckets.map((name) => `name:           ${name}\ncreation_date:  2026-11-27\n`).join("\n"));
    if (command === "r2" && sub === "bucket" && third === "create") {
      account.buckets.push(args[3]!);
      return ok(`Created bucket '${args[3]}'`);
    }
    if (command === "queues" && sub === "list")
      return ok(
        [
          "┌─────┬──────┬────────────┐",
          "│ id  │ name │ created_on │",
          ...account.queues.map((name, i) => `│ q${i} │ ${name} │ 2026-11-29 │`),
          "└─────┴──────┴────────────┘",
        ].join("\n"),
      );
    if (command === "queues" && sub === "create") {
      account.queues.push(third!);
      return ok(`Created queue ${third}.`);
    }
    if (command === "d1" && sub === "migrations")
      return failMigration
        ? fail("✘ [ERROR] Migration 0010_x.sql failed with the following errors")
        : ok("Migrations applied");
    if (command === "secret" && sub === "list") {
      if (secretsUnreachable) return fail("✘ [ERROR] A request to the Cloudflare API failed. [code: 10013]");
      if (!account.worker)
        return fail(
          '✘ [ERROR] Worker "media-host" not found.\n\nIf this is a new Worker, run `wrangler deploy` first to create it.',
        );
      return ok(JSON.stringify([...account.secrets.keys()].map((name) => ({ name, type: "secret_text" }))));
    }
    if (command === "deploy") {
      const file = args[args.indexOf("--secrets-file") + 1];
      if (args.includes("--secrets-file")) {
        for (const [name, value] of Object.entries(JSON.parse(files.get(file!)!.text) as Record<string, string>)) {
          if (account.secrets.has(name)) overwritten.push(name);
          account.secrets.set(name, value);
        }
      }
      account.worker = true;
      return ok(deployOutput(config, targets));
    }
    return fail(`unexpected call: wrangler ${args.join(" ")}`);
  };
  const logs: string[] = [];
  /** Every request the deploy makes after wrangler, as "METHOD URL Authorization". */
  const requests: string[] = [];
  let n = 0;
  const options = {
    run,
    config,
    fetch: async (url: string | URL | Request, init?: RequestInit) => {
      requests.push(`${init?.method} ${url} ${new Headers(init?.headers).get("Authorization")}`);
      const { name } = JSON.parse(String(init?.body)) as { name: string };
      return Response.json({ data: { id: "acc_1", name, full_key: "fk", upload_key: "uk" } }, { status: 201 });
    },
    docker: false,
    writeFile: (name: string, text: string, mode?: number) => void files.set(name, { text, mode }),
    removeFile: (name: string) => void files.delete(name),
    log: (line: string) => void logs.push(line),
    random: () => `random-${++n}`,
  };
  return { account, files, calls, overwritten, logs, requests, options };
}

const deployArgs = (calls: string[]) => calls.filter((call) => call.startsWith("deploy"));

describe("npm run deploy", () => {
  it("makes everything on a first deploy, in an order that never runs the Worker on an unknown schema", async () => {
    const s = standIn();
    const result = await deploy(s.options);
    expect(s.calls).toEqual([
      "whoami",
      "d1 list --json",
      "d1 create media-host",
      "d1 list --json",
      "r2 bucket list",
      "r2 bucket create media-host-files",
      "queues list",
      "queues create media-host-webhooks",
      "queues create media-host-webhooks-dead",
      `d1 migrations apply DB --remote --config ${DEPLOY_CONFIG}`,
      `secret list --format json --config ${DEPLOY_CONFIG}`,
      `deploy --config ${DEPLOY_CONFIG} --secrets-file .wrangler/deploy/secrets.json --containers-rollout=none`,
    ]);
    expect(s.files.get(DEPLOY_CONFIG)!.text).toContain('database_id = "uuid-1"');
    expect([...s.account.secrets.keys()].sort()).toEqual(["ADMIN_TOKEN", "LINK_SIGNING_SECRET", "MEDIA_SECRET"]);
    // The secrets file is gone once the deploy ends; the admin token is kept for its owner alone.
    expect(s.files.has(".wrangler/deploy/secrets.json")).toBe(false);
    expect(s.files.get(".wrangler/deploy/admin-token")).toEqual({
      text: `${s.account.secrets.get("ADMIN_TOKEN")}\n`,
      mode: 0o600,
    });
    expect(result).toMatchObject({
      url: "https://media-host.someone.workers.dev",
      adminTokenFile: ".wrangler/deploy/admin-token",
    });
    expect(s.logs.join("\n")).toContain("No Docker daemon");
  });

  it("changes nothing that exists on a second deploy, and never overwrites a secret", async () => {
    const s = standIn();
    await deploy(s.options);
    const before = new Map(s.account.secrets);
    s.calls.length = 0;
    const again = await deploy({ ...s.options, docker: true });
    expect(s.calls.filter((call) => call.includes("create"))).toEqual([]);
    expect(deployArgs(s.calls)).toEqual([`deploy --config ${DEPLOY_CONFIG}`]);
    expect(s.account.secrets).toEqual(before);
    expect(s.overwritten).toEqual([]);
    expect(again.adminTokenFile).toBeNull();
  });

  it("makes only the secrets that are missing", async () => {
    const s = standIn();
    await deploy(s.options);
    s.account.secrets.delete("MEDIA_SECRET");
    const admin = s.account.secrets.get("ADMIN_TOKEN");
    await deploy(s.options);
    expect(s.overwritten).toEqual([]);
    expect(s.account.secrets.get("ADMIN_TOKEN")).toBe(admin);
    expect(s.account.secrets.has("MEDIA_SECRET")).toBe(true);
  });

  it("stops before the deploy when a migration fails, with nothing of the Worker changed", async () => {
    const s = standIn({ failMigration: true });
    await expect(deploy(s.options)).rejects.toThrow(/Applying the D1 migrations failed:[\s\S]*0010_x.sql/);
    expect(deployArgs(s.calls)).toEqual([]);
    expect(s.calls).not.toContain(`secret list --format json --config ${DEPLOY_CONFIG}`);
    expect(s.account.secrets.size).toBe(0);
  });

  it("stops, sending no secret, when the existing secrets cannot be listed", async () => {
    const first = standIn();
    await deploy(first.options);
    const s = standIn({ secretsUnreachable: true });
    s.account.secrets = new Map(first.account.secrets);
    s.account.worker = true;
    await expect(deploy(s.options)).rejects.toThrow(/Listing the Worker's secrets failed/);
    expect(deployArgs(s.calls)).toEqual([]);
    expect(s.account.secrets).toEqual(first.account.secrets);
  });

  it("takes the service's address from the triggers wrangler deployed, never from the bindings table", async () => {
    const s = standIn();
    expect(deployOutput(CONFIG, [])).toContain('env.DNS_RESOLVER_URL ("https://cloudflare-dns.com/dns-query")');
    const result = await deploy(s.options);
    expect(result.url).toBe(WORKERS_DEV);
  });

  it("creates the first account on the deployed Worker alone, with the admin token it made", async () => {
    const s = standIn();
    const result = await deploy({ ...s.options, account: "me" });
    expect(s.requests).toEqual([`POST ${WORKERS_DEV}/admin/accounts Bearer ${s.account.secrets.get("ADMIN_TOKEN")}`]);
    expect(result.account).toMatchObject({ name: "me" });
    // A later deploy makes no token: the one given (ADMIN_TOKEN in the environment) is used.
    s.requests.length = 0;
    await deploy({ ...s.options, account: "you", adminToken: "operator-token" });
    expect(s.requests).toEqual([`POST ${WORKERS_DEV}/admin/accounts Bearer operator-token`]);
  });

  it("prefers a custom domain or route of wrangler.toml to the workers.dev address", async () => {
    const config = CONFIG.replace(
      /^compatibility_date = .*$/m,
      '$&\nroutes = [\n  { pattern = "media.example.com", custom_domain = true },\n  { pattern = "example.org/*", zone_name = "example.org" },\n]',
    );
    const domain = standIn({
      config,
      targets: [WORKERS_DEV, "media.example.com (custom domain)", "schedule: * * * * *"],
    });
    expect((await deploy(domain.options)).url).toBe("https://media.example.com");
    const route = standIn({ config, targets: ["example.org/* (zone name: example.org)", WORKERS_DEV] });
    expect((await deploy({ ...route.options, account: "me" })).url).toBe("https://example.org");
    expect(route.requests).toEqual([expect.stringMatching(/^POST https:\/\/example\.org\/admin\/accounts Bearer /)]);
  });

  it("sends the token nowhere when wrangler names no address of this Worker, and says how to finish by hand", async () => {
    for (const targets of [
      [],
      ["schedule: * * * * *"],
      ["https://media-host-copy.someone.workers.dev", "elsewhere.example.net (custom domain)", "*.example.com/*"],
    ]) {
      const s = standIn({ targets });
      const result = await deploy({ ...s.options, account: "me" });
      expect(result.url).toBeNull();
      expect(result.account).toBeNull();
      expect(s.requests).toEqual([]);
      expect(result.next).toMatch(/sent nowhere[\s\S]*\/admin\/accounts/);
    }
  });

  it("says how to log in when wrangler is not", async () => {
    const s = standIn({ loggedIn: false });
    await expect(deploy(s.options)).rejects.toThrow(DeployError);
    await expect(deploy(s.options)).rejects.toThrow(/wrangler login/);
    expect(s.calls.every((call) => call === "whoami")).toBe(true);
  });
});

describe("the files npm run deploy keeps", () => {
  const root = mkdtempSync(path.join(os.tmpdir(), "deploy-files-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const TOKEN = ".wrangler/deploy/admin-token";

  it("writes the admin token as a new file of mode 600, never through a link planted where it goes", () => {
    const victim = path.join(root, "victim");
    writeFileSync(victim, "precious\n", { mode: 0o644 });
    mkdirSync(path.join(root, ".wrangler/deploy"), { recursive: true });
    symlinkSync(victim, path.join(root, TOKEN));
    writeProjectFile(root, TOKEN, "token-1\n", 0o600);
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    const written = lstatSync(path.join(root, TOKEN));
    expect(written.isFile()).toBe(true);
    expect(written.mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(root, TOKEN), "utf8")).toBe("token-1\n");

    // A hard link to someone's file, or a file others could read, is replaced, not written into.
    rmSync(path.join(root, TOKEN));
    linkSync(victim, path.join(root, TOKEN));
    writeProjectFile(root, TOKEN, "token-2\n", 0o600);
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect(lstatSync(path.join(root, TOKEN)).mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(root, TOKEN), "utf8")).toBe("token-2\n");
    expect(readdirSync(path.join(root, ".wrangler/deploy"))).toEqual(["admin-token"]);
  });

  it("refuses a folder on the way that is a link, writing nothing there", () => {
    const elsewhere = mkdtempSync(path.join(os.tmpdir(), "deploy-elsewhere-"));
    try {
      rmSync(path.join(root, ".wrangler"), { recursive: true, force: true });
      mkdirSync(path.join(root, ".wrangler"));
      symlinkSync(elsewhere, path.join(root, ".wrangler/deploy"));
      expect(() => writeProjectFile(root, TOKEN, "token-3\n", 0o600)).toThrow(/\.wrangler\/deploy is a symbolic link/);
      expect(readdirSync(elsewhere)).toEqual([]);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});
