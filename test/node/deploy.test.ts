import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DEPLOY_CONFIG, DeployError, deploy, type WranglerResult } from "../../scripts/lib/deploy.mjs";
import { ROOT } from "../../scripts/lib/server.mjs";

const CONFIG = readFileSync(path.join(ROOT, "wrangler.toml"), "utf8");

/**
 * A Cloudflare account as wrangler shows it, and wrangler itself: each call is recorded and
 * answered as wrangler 4.164 answers it (its JSON where it has one, its text otherwise).
 */
function standIn({ loggedIn = true, failMigration = false, secretsUnreachable = false } = {}) {
  const account = {
    databases: [] as { uuid: string; name: string }[],
    buckets: [] as string[],
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
      return ok("Uploaded media-host\nDeployed media-host triggers\n  https://media-host.someone.workers.dev\n");
    }
    return fail(`unexpected call: wrangler ${args.join(" ")}`);
  };
  const logs: string[] = [];
  let n = 0;
  const options = {
    run,
    config: CONFIG,
    docker: false,
    writeFile: (name: string, text: string, mode?: number) => void files.set(name, { text, mode }),
    removeFile: (name: string) => void files.delete(name),
    log: (line: string) => void logs.push(line),
    random: () => `random-${++n}`,
  };
  return { account, files, calls, overwritten, logs, options };
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

  it("says how to log in when wrangler is not", async () => {
    const s = standIn({ loggedIn: false });
    await expect(deploy(s.options)).rejects.toThrow(DeployError);
    await expect(deploy(s.options)).rejects.toThrow(/wrangler login/);
    expect(s.calls.every((call) => call === "whoami")).toBe(true);
  });
});
