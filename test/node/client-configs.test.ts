import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import vm from "node:vm";
import { PicGo } from "picgo";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount, fixture, fixturePath, sharedTestServer, type TestAccount, type TestServer } from "./server";

/**
 * The configurations the uploader page hands out (src/site/browser/client-configs.js, evaluated
 * here as the browser runs it), used by the tools themselves where they run headless: PicGo-Core
 * with picgo-plugin-web-uploader, and Typora's command in a shell. uPic is a macOS app: its
 * import file is read here the way uPic reads it, and its request sent as uPic sends it.
 */

interface ClientConfigs {
  picGo(origin: string, key: string): object;
  uPic(origin: string, key: string, now: number): string[];
  typora(origin: string, key: string): string;
}

// The file as served (/assets/client-configs.js), run as a classic script: its one global is the result.
const script = readFileSync(path.join(import.meta.dirname, "../../src/site/browser/client-configs.js"), "utf8");
const configs = vm.runInNewContext(`${script}\nclientConfigs`, {}) as ClientConfigs;
const PHOTO = "gps/DSCN0010.jpg";

let server: TestServer;
let account: TestAccount;
let dir: string;

beforeAll(async () => {
  server = await sharedTestServer();
  account = await createAccount(server, "client configs");
  dir = await mkdtemp(path.join(os.tmpdir(), "client-configs-"));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The upload the API has for the same bytes: POST /api of the photo answers it as a duplicate. */
async function sameUploadAs(src: string) {
  const form = new FormData();
  form.append("uploads", new Blob([await fixture(PHOTO)]), "photo.jpg");
  const res = await fetch(server.api, { method: "POST", headers: { "X-API-Key": account.upload }, body: form });
  const { data } = (await res.json()) as { data: { src: string; duplicate: boolean; size: number } };
  expect(data).toMatchObject({ src, duplicate: true });
  const served = await fetch(src);
  expect(served.status).toBe(200);
  expect(served.headers.get("Content-Type")).toBe("image/jpeg");
  const bytes = new Uint8Array(await served.arrayBuffer());
  expect(bytes.length).toBe(data.size);
  expect([...bytes.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
}

describe("the configurations the uploader page hands out", () => {
  it("PicGo-Core 3.1.0 with picgo-plugin-web-uploader uploads a photo with its configuration", async () => {
    // PicGo's own layout: config.json, and its plugins in node_modules beside it (installed by
    // npm for this project, linked there rather than fetched).
    const home = path.join(dir, "picgo");
    await mkdir(path.join(home, "node_modules"), { recursive: true });
    const plugin = path.dirname(createRequire(import.meta.url).resolve("picgo-plugin-web-uploader/package.json"));
    await symlink(plugin, path.join(home, "node_modules", "picgo-plugin-web-uploader"));
    await writeFile(
      path.join(home, "package.json"),
      JSON.stringify({ name: "picgo-plugins", private: true, dependencies: { "picgo-plugin-web-uploader": "1.1.1" } }),
    );
    const configPath = path.join(home, "config.json");
    await writeFile(configPath, JSON.stringify(configs.picGo(server.url, account.upload), null, 2));

    const picgo = new PicGo(configPath);
    // Its log lines only: the configuration stays the one handed out.
    picgo.setConfig({ silent: true });
    const failures: unknown[] = [];
    picgo.on("notification", (note: unknown) => failures.push(note));
    const output = await picgo.upload([fixturePath(PHOTO)]);
    expect(failures).toEqual([]);
    const uploaded = output as { imgUrl?: string }[];
    expect(uploaded).toHaveLength(1);
    const src = uploaded[0]!.imgUrl!;
    expect(src).toMatch(new RegExp(`^${server.url}/i/[0-9A-Za-z]{10}$`));
    await sameUploadAs(src);
  });

  it("Typora's custom command prints one link a line for the images it is given", async () => {
    const command = `${configs.typora(server.url, account.upload)} '${fixturePath(PHOTO)}'`;
    const { stdout } = await promisify(execFile)("sh", ["-c", command]);
    const lines = stdout.split("\n").filter(Boolean);
    expect(lines).toHaveLength(1);
    await sameUploadAs(lines[0]!);
  });

  it("uPic's host file holds a custom host whose request and result path give the link", async () => {
    const [entry, ...others] = configs.uPic(server.url, account.upload, Date.now());
    expect(others).toEqual([]);
    const host = JSON.parse(entry!) as { type: string; data: string };
    expect(host.type).toBe("custom");
    const config = JSON.parse(host.data) as Record<string, string | boolean>;
    expect(config).toMatchObject({ method: "POST", useBase64: false, domain: "", suffix: "" });
    const headers = Object.fromEntries(
      (JSON.parse(config.headers as string) as { key: string; value: string }[]).map((h) => [h.key, h.value]),
    );
    const form = new FormData();
    form.append(config.field as string, new Blob([await fixture(PHOTO)], { type: "image/jpeg" }), "photo.jpg");
    const res = await fetch(config.url as string, { method: "POST", headers, body: form });
    let found: unknown = await res.json();
    for (const step of JSON.parse(config.resultPath as string) as string[])
      found = (found as Record<string, unknown>)[step];
    await sameUploadAs(found as string);
  });
});
