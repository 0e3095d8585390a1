import { spawn } from "node:child_process";
import { once } from "node:events";
import { rmSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { claim, PORT_CLAIMS, portInUse, ROOT } from "../../scripts/lib/server.mjs";
import { startTestServer, type TestServer } from "./server";

/**
 * `npm test` while `npm run dev` (or any other wrangler dev) is open: that one holds the devtools
 * port 9229. Every server a test starts must take free ports of its own, the devtools one included.
 */
let holder: net.Server | undefined;
let server: TestServer | undefined;

afterAll(async () => {
  await server?.stop();
  await new Promise((resolve) => (holder ? holder.close(resolve) : resolve(undefined)));
});

it("starts a test server while another process holds the usual devtools port", async () => {
  if (!(await portInUse(9229))) {
    holder = net.createServer();
    await new Promise<void>((resolve, reject) => holder!.once("error", reject).listen(9229, "127.0.0.1", resolve));
  }
  expect(await portInUse(9229)).toBe(true);
  server = await startTestServer();
  expect((await fetch(`${server.api}/openapi.json`)).status).toBe(200);
});

it("never lets two processes of a run claim one port, and takes over the claim of an ended one", async () => {
  // Below the range freePort picks from: no server of the run claims it meanwhile.
  const port = 1100 + Math.floor(Math.random() * 400);
  const server = path.join(ROOT, "scripts", "lib", "server.mjs");
  const child = spawn(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `const { claim } = await import(${JSON.stringify(server)});
       console.log(claim(${port})); setInterval(() => {}, 1000);`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  try {
    const [line] = (await once(child.stdout!, "data")) as [Buffer];
    expect(line.toString().trim()).toBe("true");
    expect(claim(port)).toBe(false);
    child.kill("SIGKILL");
    await once(child, "exit");
    expect(claim(port)).toBe(true);
    expect(claim(port), "a port is handed out once, to its own process too").toBe(false);
  } finally {
    child.kill("SIGKILL");
    rmSync(path.join(PORT_CLAIMS, String(port)), { force: true });
  }
});
