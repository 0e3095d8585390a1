import { spawnSync } from "node:child_process";
import { rmSync, writeFileSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, ROOT, startServer } from "../../scripts/lib/server.mjs";
import { FIXTURES_DIR, testFrame } from "../support/media";
import { ffmpeg } from "../support/tools";
import { ADMIN_TOKEN, createAccount, type TestServer } from "./server";

/**
 * The deployed path with a real container: `wrangler dev` with containers enabled builds
 * container/Dockerfile and runs it through the local Docker daemon, and the Worker reaches it
 * through the MEDIA_CONTAINER binding alone (no MEDIA_SERVICE_URL). Runs wherever a Docker daemon
 * answers; skipped, saying so, elsewhere. wrangler's own variables pass through, for machines
 * that need them (WRANGLER_DOCKER_BIN for a docker without buildx, MINIFLARE_CONTAINER_EGRESS_IMAGE
 * where Docker Hub cannot be reached).
 */
const docker = process.env.WRANGLER_DOCKER_BIN || "docker";
const probe = spawnSync(docker, ["info", "--format", "{{.ServerVersion}}"], { encoding: "utf8", timeout: 10_000 });
const daemon = probe.status === 0 ? probe.stdout.trim() : null;
if (!daemon)
  console.log(
    `Container end-to-end tests skipped: no Docker daemon answers (\`${docker} info\`: ${(probe.stderr || String(probe.error ?? "")).trim().split("\n")[0]}).`,
  );

const CONFIG = `wrangler.containers-test.${process.pid}.toml`;
let server: TestServer | undefined;
let stateDir: string | undefined;

afterAll(async () => {
  await server?.stop();
  rmSync(path.join(ROOT, CONFIG), { force: true });
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

async function processed(key: string, id: string, done: (data: Record<string, any>) => boolean) {
  for (const deadline = Date.now() + 5 * 60_000; ; await new Promise((r) => setTimeout(r, 1000))) {
    const res = await fetch(`${server!.api}/${id}`, { headers: { "X-API-Key": key } });
    const { data } = (await res.json()) as { data: Record<string, any> };
    if (res.status === 200 && done(data)) return data;
    if (Date.now() > deadline) throw new Error(`upload ${id} not processed: ${JSON.stringify(data)}`);
  }
}

async function send(key: string, bytes: Uint8Array, name: string) {
  const form = new FormData();
  form.append("uploads", new Blob([bytes]), name);
  const res = await fetch(server!.api, { method: "POST", headers: { "X-API-Key": key }, body: form });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { id: string } }).data;
}

async function stored(url: string, type: string) {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get("Content-Type")).toBe(type);
  expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
}

describe.skipIf(!daemon)("media work in a real container (Docker)", () => {
  it(
    "converts a video, a HEIC and a 12 MP JPEG, and stores their files and thumbnails",
    async () => {
      stateDir = await mkdtemp(path.join(os.tmpdir(), "containers-e2e-"));
      // The project's configuration with containers on; written beside it, as its paths are relative.
      const toml = readFileSync(path.join(ROOT, "wrangler.toml"), "utf8").replace(
        /^enable_containers = false$/m,
        "enable_containers = true",
      );
      expect(toml).toContain("enable_containers = true");
      writeFileSync(path.join(ROOT, CONFIG), toml);
      const started = await startServer({
        port: await freePort(),
        stateDir,
        config: CONFIG,
        vars: {
          ADMIN_TOKEN,
          MEDIA_SECRET: "containers-e2e-media-secret-0123",
          LINK_SIGNING_SECRET: "containers-e2e-link-secret-0123",
          RATE_LIMITS: "off",
        },
        // The first run builds the image.
        timeoutMs: 15 * 60_000,
      });
      server = { url: started.url, api: `${started.url}/api`, stop: started.stop };
      const account = await createAccount(server, "containers");

      const dir = stateDir;
      await ffmpeg([
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=320x240:rate=25:duration=2",
        "-f",
        "lavfi",
        "-i",
        "sine=duration=2",
        "-c:v",
        "mpeg4",
        "-c:a",
        "mp3",
        path.join(dir, "clip.avi"),
      ]);
      await ffmpeg([...testFrame("4000x3000"), "-q:v", "3", path.join(dir, "photo-12mp.jpg")]);
      const uploads = {
        video: await send(account.full, await readFile(path.join(dir, "clip.avi")), "clip.avi"),
        heic: await send(account.full, await readFile(path.join(FIXTURES_DIR, "heic/IMG_5195.HEIC")), "photo.heic"),
        jpeg: await send(account.full, await readFile(path.join(dir, "photo-12mp.jpg")), "photo.jpg"),
      };
      const video = await processed(account.full, uploads.video.id, (d) => /\.mp4$/.test(d.path) && !!d.thumb);
      const heic = await processed(account.full, uploads.heic.id, (d) => /\.webp$/.test(d.path) && !!d.thumb);
      const jpeg = await processed(account.full, uploads.jpeg.id, (d) => !!d.thumb);
      await stored(video.path, "video/mp4");
      await stored(heic.path, "image/webp");
      for (const upload of [video, heic, jpeg]) await stored(upload.thumb, "image/webp");
    },
    25 * 60_000,
  );
});
